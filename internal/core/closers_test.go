package core

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClosersUndoLastFirst(t *testing.T) {
	t.Parallel()
	var order []string
	var c closers
	failed := errors.New("the store would not close")
	c.push(func() error { order = append(order, "store"); return failed })
	c.pushStop(func() { order = append(order, "leases") })
	c.push(func() error { order = append(order, "blobs"); return nil })
	require.ErrorIs(t, c.close(), failed)
	require.Equal(t, []string{"blobs", "leases", "store"}, order)
	require.NoError(t, c.close(), "a second close does nothing")
	require.Len(t, order, 3)
}
