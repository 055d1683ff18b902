package api

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/nodes"
)

// A batch op's internal error (a panic, which nodes.Service.Batch turns
// into that op's error) is that op's 500: a generic problem with the
// request's id, its text logged and never answered.
func TestABatchOpsInternalErrorIsItsOwn500(t *testing.T) {
	var logged bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logged, nil))}
	got := s.batchItem(nil, nodes.BatchResult{Kind: nodes.BatchRenew, NodeID: "n1", Err: errors.New("panic in a batch op: x")}, "req-1")
	require.Equal(t, http.StatusInternalServerError, got.Status)
	require.Equal(t, "n1", got.ID)
	prob, ok := got.Body.(*Problem)
	require.True(t, ok, "%T", got.Body)
	require.Equal(t, "req-1", prob.RequestID)
	require.NotContains(t, prob.Detail, "panic")
	require.Contains(t, logged.String(), "panic in a batch op: x")
}
