package graphstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// pointerKeys counts the pointer keys (w|t|id|seq) of a node.
func pointerKeys(t *testing.T, s *Store, tenant, id string) int {
	t.Helper()
	n := 0
	require.NoError(t, s.kv.View(func(tx *kv.Txn) error {
		return tx.Scan(records.NewKey(records.TagNodeEvent, tenant).Str(id).Bytes(), nil, false, false, func(_, _ []byte) (bool, error) {
			n++
			return true, nil
		})
	}))
	return n
}

// storedPointers reads the pointers at the end of a node's stored record.
func storedPointers(t *testing.T, s *Store, tenant, id string) []uint64 {
	t.Helper()
	var out []uint64
	require.NoError(t, s.kv.View(func(tx *kv.Txn) error {
		b, _, err := tx.Get(records.NodeKey(tenant, id))
		eachRecordPointer(b, func(seq uint64) { out = append(out, seq) })
		return err
	}))
	return out
}

// setRecordPointers rewrites a node's stored record with exactly the pointers
// seqs after its fields (behind the store's back, as a damaged or older
// store would hold it).
func setRecordPointers(t *testing.T, s *Store, tenant, id string, seqs ...uint64) {
	t.Helper()
	require.NoError(t, s.kv.Update(context.Background(), func(tx *kv.Txn) error {
		b, _, err := tx.Get(records.NodeKey(tenant, id))
		if err != nil {
			return err
		}
		tuple, _ := recordPointers(b)
		b = b[:tuple:tuple]
		for _, seq := range seqs {
			b, _ = withRecordPointer(b, seq, 0)
		}
		return tx.Set(records.NodeKey(tenant, id), b)
	}))
}

// eventsOf lists node id's events from the whole feed, and through
// NodeEvents in pages of size page.
func eventsOf(t *testing.T, s *Store, tenant, id string, page int) (feed, paged []uint64) {
	t.Helper()
	require.NoError(t, s.View(func(tx *Tx) error {
		all, err := tx.EventsAfter(tenant, 0, 100000)
		require.NoError(t, err)
		for _, ev := range all {
			if ev.NodeID == id {
				feed = append(feed, ev.Seq)
			}
		}
		var after uint64
		for {
			evs, err := tx.NodeEvents(tenant, id, after, page)
			require.NoError(t, err)
			for _, ev := range evs {
				require.Equal(t, id, ev.NodeID)
				paged = append(paged, ev.Seq)
			}
			if len(evs) < page {
				return nil
			}
			after = evs[len(evs)-1].Seq
		}
	}))
	return feed, paged
}

// TestEventPointersLiveInTheRecordsTheirTransactionsWrote: a transaction that
// writes a node's record points at its event group from the record, up to
// maxRecordPointers; one that does not (a bare event) and the groups past the
// cap get pointer keys. NodeEvents merges both in seq order, a deleted node's
// pointers become keys, and tether check accepts every state.
func TestEventPointersLiveInTheRecordsTheirTransactionsWrote(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, Clock: clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
	require.NoError(t, err)
	ctx := context.Background()
	insert(t, s, newNode("acme", "a", 0))
	insert(t, s, newNode("acme", "other", 0))
	update := func(i int) {
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			n, err := tx.NodeGet("acme", "a")
			if err != nil {
				return err
			}
			n.Title = fmt.Sprint("v", i)
			if err := tx.NodePut(n); err != nil {
				return err
			}
			// Two events of the node in one group: one pointer.
			if err := tx.Emit("acme", records.EventUpdated, "a", "head", map[string]any{"i": i}); err != nil {
				return err
			}
			return tx.Emit("acme", records.EventUpdated, "a", "head", map[string]any{"i": i, "again": true})
		}))
	}
	bares := 0
	bare := func() { // an event of the node, its record untouched
		bares++
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			return tx.Emit("acme", records.EventCommented, "a", "head", nil)
		}))
	}

	for i := range 10 {
		update(i)
	}
	bare()
	require.Len(t, storedPointers(t, s, "acme", "a"), 11, "created and 10 updates")
	require.Equal(t, 1, pointerKeys(t, s, "acme", "a"), "the bare event")
	for i := 10; i < 40; i++ {
		update(i)
		if i%7 == 0 {
			bare()
		}
	}
	require.Len(t, storedPointers(t, s, "acme", "a"), maxRecordPointers)
	groups := 1 + 40 + bares // created, updates, bare events
	require.Equal(t, groups-maxRecordPointers, pointerKeys(t, s, "acme", "a"))
	require.Zero(t, pointerKeys(t, s, "acme", "other"))

	for _, page := range []int{1, 3, 1000} {
		feed, paged := eventsOf(t, s, "acme", "a", page)
		require.Len(t, feed, 1+80+bares)
		require.Equal(t, feed, paged, "pages of %d", page)
	}

	// Deleted: the record's pointers become keys, and the events stay listed.
	feed, _ := eventsOf(t, s, "acme", "a", 1000)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		n, err := tx.NodeGet("acme", "a")
		if err != nil {
			return err
		}
		return tx.NodeDelete(n, "head")
	}))
	require.Equal(t, groups+1, pointerKeys(t, s, "acme", "a"), "and the deleted event's group")
	_, paged := eventsOf(t, s, "acme", "a", 7)
	require.Equal(t, feed, paged[:len(feed)], "and the deleted event after them")
	require.NoError(t, s.Close())

	rep, err := Check(dir)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	require.Equal(t, records.FormatVersion, rep.Format)
}

// TestCheckFindsABrokenRecordPointer: a record pointing at a group with no
// event of the node is reported.
func TestCheckFindsABrokenRecordPointer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	insert(t, s, newNode("acme", "a", 0))
	insert(t, s, newNode("acme", "b", 0))
	// b's record also points at a's created group.
	pa := storedPointers(t, s, "acme", "a")
	require.Len(t, pa, 1)
	setRecordPointers(t, s, "acme", "b", pa[0])
	require.NoError(t, s.Close())
	rep, err := Check(dir)
	require.NoError(t, err)
	require.Contains(t, fmt.Sprint(rep.Problems), fmt.Sprintf("node acme/b points at event group %d from its record, which has no event of it", pa[0]))
	require.Contains(t, fmt.Sprint(rep.Problems), "has an event of b with no pointer from it")
}

// TestALargeTransactionsEventsAreStoredAsSeveralGroups: the events of one
// transaction that encode larger than maxEventGroupBytes are stored as
// consecutive groups, each within the bound; the feed and every node's
// events read back whole and in order, and tether check accepts the store.
func TestALargeTransactionsEventsAreStoredAsSeveralGroups(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, Clock: clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
	require.NoError(t, err)
	ctx := context.Background()
	const nodes = 40
	for i := range nodes {
		insert(t, s, newNode("acme", fmt.Sprint("n", i), 0))
	}
	var before uint64
	require.NoError(t, s.View(func(tx *Tx) error {
		all, err := tx.EventsAfter("acme", 0, 100000)
		before = all[len(all)-1].Seq
		return err
	}))
	pad := string(make([]byte, 1000))
	const events = 3000 // ~3 MB: six groups or more
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		for i := range events {
			if err := tx.Emit("acme", records.EventCommented, fmt.Sprint("n", i%nodes), "head", map[string]any{"i": i, "pad": pad}); err != nil {
				return err
			}
		}
		return nil
	}))

	var sizes []int
	require.NoError(t, s.kv.View(func(tx *kv.Txn) error {
		return tx.Scan(records.NewKey(records.TagEvent, "acme").Bytes(), records.EventKey("acme", before), false, true, func(_, val []byte) (bool, error) {
			sizes = append(sizes, len(val))
			return true, nil
		})
	}))
	require.GreaterOrEqual(t, len(sizes), 6, "one transaction's events in several groups")
	for _, n := range sizes {
		require.LessOrEqual(t, n, maxEventGroupBytes)
	}

	require.NoError(t, s.View(func(tx *Tx) error {
		all, err := tx.EventsAfter("acme", before, 100000)
		require.NoError(t, err)
		require.Len(t, all, events)
		for i, ev := range all {
			require.Equal(t, before+1+uint64(i), ev.Seq)
			require.EqualValues(t, i, ev.Data.Get("i"))
		}
		return nil
	}))
	feed, paged := eventsOf(t, s, "acme", "n7", 10)
	require.Len(t, feed, 1+events/nodes, "created, then its comments")
	require.Equal(t, feed, paged)
	require.NoError(t, s.Close())
	rep, err := Check(dir)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
}
