package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/tenant"
)

// A batch op runs on a goroutine of its own, outside the handler's panic
// recovery: its panic must become that op's 500, not end the process.
func TestABatchOpsPanicIsItsOwn500(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	boom := func(context.Context, *tenant.Principal, string, []byte) (int, any, error) {
		panic("x")
	}
	got := s.runBatchOp(context.Background(), nil, "n1", boom, nil, "req-1")
	require.Equal(t, http.StatusInternalServerError, got.Status)
	require.Equal(t, "n1", got.ID)
}
