package graphstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

func TestCheckIsCleanAfterRealChangesAndFindsABrokenRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c", "p"} {
		insert(t, s, newNode("acme", id, 0))
	}
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		if err := tx.EdgeInsert("acme", &records.Edge{From: "a", Type: EdgeDependsOn, To: "b"}); err != nil {
			return err
		}
		c, err := tx.NodeGet("acme", "c")
		if err != nil {
			return err
		}
		c.Parent = "p"
		if err := tx.NodePut(c); err != nil {
			return err
		}
		return tx.EdgeInsert("acme", &records.Edge{From: "p", Type: EdgeParentOf, To: "c"})
	}))
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		e, err := tx.EdgeGet("acme", "a", EdgeDependsOn, "b")
		if err != nil {
			return err
		}
		if err := tx.EdgeRetire("acme", e, "x", nil); err != nil {
			return err
		}
		b, err := tx.NodeGet("acme", "b")
		if err != nil {
			return err
		}
		return tx.NodeDelete(b, "x")
	}))
	require.NoError(t, s.Close())

	rep, err := Check(dir)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	require.Equal(t, 3, rep.Nodes)
	require.Equal(t, 1, rep.LiveEdges)
	require.Equal(t, 1, rep.RetiredEdges)
	require.Equal(t, 2, rep.Ready, "a (its dependency retired) and c; p waits for c")

	// A live edge whose node is gone: what a torn write would leave.
	s, err = Open(Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s.kv.Update(ctx, func(tx *kv.Txn) error {
		return tx.Delete(records.NodeKey("acme", "c"))
	}))
	require.NoError(t, s.Close())
	rep, err = Check(dir)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Problems)
	require.Contains(t, rep.Problems[0], "node c does not exist")
}

// Check derives the state as Open does, flow control's slots and the
// start_by deadlines included: a store with both checks clean.
func TestCheckDerivesSlotsAndStartBy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	held := newNode("acme", "held", 0)
	held.ConcurrencyKeys, held.SlotHeld = []string{"repo:web"}, true
	insert(t, s, held)
	due := newNode("acme", "due", 0)
	at := s.clock.Now().Add(time.Hour).UTC()
	due.StartBy = &at
	insert(t, s, due)
	require.NoError(t, s.Close())

	rep, err := Check(dir)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	require.Equal(t, 2, rep.Nodes)
}
