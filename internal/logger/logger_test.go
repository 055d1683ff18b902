package logger

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOrDiscard(t *testing.T) {
	t.Parallel()
	l := slog.Default()
	require.Same(t, l, OrDiscard(l))
	d := OrDiscard(nil)
	require.NotNil(t, d)
	require.False(t, d.Enabled(context.Background(), slog.LevelError), "nil discards")
}
