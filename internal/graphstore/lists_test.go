package graphstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/records"
)

// TestListsCatchUpBeforeEveryWalk: the writer only marks the entries it
// changes; a list catches the indexes up first, so it holds every commit
// before it, each node once, under its latest state, however many commits
// changed it (or removed it and made it again) since the last catch-up.
func TestListsCatchUpBeforeEveryWalk(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()
	update := func(fn func(tx *Tx) error) { require.NoError(t, s.Update(ctx, fn)) }
	list := func(q NodeQuery) []string {
		var ids []string
		require.NoError(t, s.View(func(tx *Tx) error {
			q.Limit = 100
			page, _, err := tx.NodeList("acme", q)
			for _, n := range page {
				ids = append(ids, n.ID)
			}
			return err
		}))
		return ids
	}
	held := func(holder string) (ids []string) {
		require.NoError(t, s.View(func(tx *Tx) error { ids = tx.HeldNodeIDs("acme", holder); return nil }))
		return ids
	}
	setStatus := func(id string, st records.Status, holder string) {
		update(func(tx *Tx) error {
			n, err := tx.NodeGet("acme", id)
			if err != nil {
				return err
			}
			n.Status, n.Lease = st, nil
			if holder != "" {
				now := clk.Now()
				n.Lease = &records.Lease{By: holder, Fence: 1, TTLMS: 60000, ClaimedAt: now, RenewedAt: now, ExpiresAt: now.Add(time.Minute)}
			}
			return tx.NodePut(n)
		})
	}

	insert(t, s, newNode("acme", "a", 0))
	clk.Advance(time.Millisecond)
	insert(t, s, newNode("acme", "b", 0))
	clk.Advance(time.Millisecond)
	require.Equal(t, []string{"a", "b"}, list(NodeQuery{}))

	// Several commits between two lists: a runs, b goes and comes back with
	// a higher priority (another entry under the same id), c is new.
	setStatus("a", records.StatusRunning, "w")
	update(func(tx *Tx) error {
		n, err := tx.NodeGet("acme", "b")
		if err != nil {
			return err
		}
		return tx.NodeDelete(n, "head")
	})
	insert(t, s, newNode("acme", "b", 5))
	clk.Advance(time.Millisecond)
	insert(t, s, newNode("acme", "c", 0))

	require.Equal(t, []string{"b", "a", "c"}, list(NodeQuery{}))
	require.Equal(t, []string{"b", "c"}, list(NodeQuery{Status: string(records.StatusQueued)}))
	require.Equal(t, []string{"b", "c"}, list(NodeQuery{Queue: "q", Status: string(records.StatusQueued)}))
	require.Equal(t, []string{"a"}, list(NodeQuery{Status: string(records.StatusRunning)}))
	require.Equal(t, []string{"a"}, held("w"))

	// Claimed by another and finished, with no list in between: it leaves
	// w's and the running lists and shows once, as done.
	setStatus("a", records.StatusRunning, "v")
	setStatus("a", records.StatusDone, "")
	require.Empty(t, held("w"))
	require.Empty(t, held("v"))
	require.Empty(t, list(NodeQuery{Status: string(records.StatusRunning)}))
	require.Equal(t, []string{"a"}, list(NodeQuery{Status: string(records.StatusDone)}))
	require.Equal(t, []string{"b", "a", "c"}, list(NodeQuery{}))
	require.Equal(t, []string{"acme"}, s.Tenants())

	// A restart lists the same from the records.
	require.NoError(t, s.Close())
	s, err = Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.Equal(t, []string{"b", "a", "c"}, list(NodeQuery{}))
	require.Equal(t, []string{"a"}, list(NodeQuery{Status: string(records.StatusDone)}))
}
