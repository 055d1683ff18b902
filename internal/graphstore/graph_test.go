package graphstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/records"
)

func setup(t *testing.T) (*Store, *clocktest.Fake) {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := Open(Options{Dir: t.TempDir(), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, clk
}

func newNode(tenant, id string, priority int64) *records.Node {
	return &records.Node{
		Tenant: tenant, ID: id, Type: "task", Status: records.StatusQueued, Queue: "q", Priority: priority,
		Labels: []string{}, Props: map[string]any{}, MaxAttempts: 5,
		Usage: map[string]float64{}, UsageTotal: map[string]float64{}, OnChildFail: "fail",
	}
}

func insert(t *testing.T, s *Store, n *records.Node) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error { return tx.NodeInsert(n, "head") }))
}

func TestInsertTakenIDIsAlreadyExists(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	insert(t, s, newNode("acme", "a", 0))
	err := s.Update(context.Background(), func(tx *Tx) error { return tx.NodeInsert(newNode("acme", "a", 0), "head") })
	var exists *fault.AlreadyExists
	require.ErrorAs(t, err, &exists)
	insert(t, s, newNode("other", "a", 0)) // the same id in another tenant is another node
}

func TestFailedUpdateLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	err := s.Update(context.Background(), func(tx *Tx) error {
		if err := tx.NodeInsert(newNode("acme", "half", 0), "head"); err != nil {
			return err
		}
		return fmt.Errorf("boom")
	})
	require.Error(t, err)
	require.NoError(t, s.View(func(tx *Tx) error {
		ok, err := tx.NodeExists("acme", "half")
		require.False(t, ok)
		evs, err2 := tx.EventsAfter("acme", 0, 10)
		require.Empty(t, evs)
		require.NoError(t, err2)
		return err
	}))
	// The seq the failed write took is not burnt: the next event is 1.
	insert(t, s, newNode("acme", "whole", 0))
	require.NoError(t, s.View(func(tx *Tx) error {
		evs, err := tx.EventsAfter("acme", 0, 10)
		require.Len(t, evs, 1)
		require.EqualValues(t, 1, evs[0].Seq)
		return err
	}))
}

func TestNodeListOrderFiltersAndPages(t *testing.T) {
	t.Parallel()
	s, clk := setup(t)
	var want []string
	for i := 0; i < 25; i++ {
		n := newNode("acme", fmt.Sprintf("n%02d", i), int64(i%3))
		if i%5 == 0 {
			n.Labels = []string{"hot"}
		}
		insert(t, s, n)
		clk.Advance(time.Millisecond)
	}
	insert(t, s, newNode("other", "x", 99))
	// priority desc, then creation asc
	for p := int64(2); p >= 0; p-- {
		for i := 0; i < 25; i++ {
			if int64(i%3) == p {
				want = append(want, fmt.Sprintf("n%02d", i))
			}
		}
	}
	var got []string
	cursor := ""
	for {
		var page []*records.Node
		require.NoError(t, s.View(func(tx *Tx) error {
			var err error
			page, cursor, err = tx.NodeList("acme", NodeQuery{Limit: 7, Cursor: cursor})
			return err
		}))
		for _, n := range page {
			got = append(got, n.ID)
		}
		if cursor == "" {
			break
		}
	}
	require.Equal(t, want, got)

	require.NoError(t, s.View(func(tx *Tx) error {
		page, next, err := tx.NodeList("acme", NodeQuery{Label: "hot", Status: "queued", Queue: "q", Limit: 100})
		require.Len(t, page, 5)
		require.Empty(t, next)
		_, _, err2 := tx.NodeList("acme", NodeQuery{Limit: 10, Cursor: "garbage"})
		var invalid *fault.Invalid
		require.ErrorAs(t, err2, &invalid)
		return err
	}))
}

func TestEdgesLiveRetiredAndCycles(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	for _, id := range []string{"a", "b", "c"} {
		insert(t, s, newNode("acme", id, 0))
	}
	add := func(from, typ, to string) error {
		return s.Update(context.Background(), func(tx *Tx) error {
			return tx.EdgeInsert("acme", &records.Edge{From: from, Type: typ, To: to, CreatedBy: "head"})
		})
	}
	require.NoError(t, add("a", EdgeDependsOn, "b"))
	require.NoError(t, add("b", EdgeParentOf, "c"))
	var cycle *fault.Cycle
	require.ErrorAs(t, add("c", EdgeDependsOn, "a"), &cycle, "c -> a closes a -> b -> c")
	require.NoError(t, add("c", "mentions", "a"), "other types may loop")
	var exists *fault.AlreadyExists
	require.ErrorAs(t, add("a", EdgeDependsOn, "b"), &exists)
	var nf *fault.NotFound
	require.ErrorAs(t, add("a", "mentions", "zzz"), &nf)

	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		e, err := tx.EdgeGet("acme", "a", EdgeDependsOn, "b")
		if err != nil {
			return err
		}
		return tx.EdgeRetire("acme", e, "head", map[string]any{"why": "test"})
	}))
	require.NoError(t, add("a", EdgeDependsOn, "b"), "a retired edge frees its key")

	require.NoError(t, s.View(func(tx *Tx) error {
		var live, all []*records.Edge
		collect := func(dst *[]*records.Edge) func(*records.Edge, []byte) (bool, error) {
			return func(e *records.Edge, _ []byte) (bool, error) { *dst = append(*dst, e); return true, nil }
		}
		require.NoError(t, tx.EdgesOf("acme", "a", EdgeQuery{Dir: DirOut}, collect(&live)))
		require.NoError(t, tx.EdgesOf("acme", "a", EdgeQuery{Dir: DirOut, IncludeRetired: true}, collect(&all)))
		require.Len(t, live, 1)
		require.Len(t, all, 2)
		require.NotNil(t, all[1].RetiredAt)
		require.Equal(t, "test", all[1].Props["why"])
		var in []*records.Edge
		require.NoError(t, tx.EdgesOf("acme", "a", EdgeQuery{Dir: DirIn}, collect(&in)))
		require.Len(t, in, 1)
		require.Equal(t, "c", in[0].From)
		return nil
	}))
}

func TestEventSeqStrictlyIncreasesAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clocktest.New(time.Now())
	s, err := Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		insert(t, s, newNode("acme", fmt.Sprintf("n%d", i), 0))
	}
	require.NoError(t, s.Close())
	s, err = Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	defer s.Close()
	insert(t, s, newNode("acme", "after", 0))
	require.NoError(t, s.View(func(tx *Tx) error {
		evs, err := tx.EventsAfter("acme", 0, 100)
		require.Len(t, evs, 6)
		for i, ev := range evs {
			require.EqualValues(t, i+1, ev.Seq)
		}
		nevs, err2 := tx.NodeEvents("acme", "after", 0, 10)
		require.Len(t, nevs, 1)
		require.EqualValues(t, 6, nevs[0].Seq)
		require.NoError(t, err2)
		return err
	}))
}

func TestDeletedNodeKeepsFenceForReuse(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	n := newNode("acme", "a", 0)
	n.LastFence = 41
	insert(t, s, n)
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		got, err := tx.NodeGet("acme", "a")
		if err != nil {
			return err
		}
		return tx.NodeDelete(got, "head")
	}))
	again := newNode("acme", "a", 0)
	insert(t, s, again)
	require.EqualValues(t, 41, again.LastFence)
}

// TestBatchedClosuresFailAlone: closures that share a writer batch (and one
// Badger transaction) succeed or fail on their own.
func TestBatchedClosuresFailAlone(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	errBoom := fmt.Errorf("boom")
	var wg sync.WaitGroup
	results := make([]error, 200)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = s.Update(ctx, func(tx *Tx) error {
				if err := tx.NodeInsert(newNode("acme", fmt.Sprintf("n%03d", i), 0), "head"); err != nil {
					return err
				}
				if i%2 == 1 {
					return errBoom // after writing: the write must vanish
				}
				return nil
			})
		}(i)
	}
	wg.Wait()
	require.NoError(t, s.View(func(tx *Tx) error {
		for i, err := range results {
			ok, e := tx.NodeExists("acme", fmt.Sprintf("n%03d", i))
			require.NoError(t, e)
			if i%2 == 1 {
				require.ErrorIs(t, err, errBoom)
				require.False(t, ok, "failed closure %d left its node", i)
			} else {
				require.NoError(t, err)
				require.True(t, ok, "closure %d lost its node", i)
			}
		}
		evs, err := tx.EventsAfter("acme", 0, 1000)
		require.Len(t, evs, 100, "one created event per successful closure")
		for j, ev := range evs {
			require.EqualValues(t, j+1, ev.Seq, "seq has no gaps")
		}
		return err
	}))
}

// A list asked for no node is a refusal, not a panic.
func TestNodeListRefusesALimitBelowOne(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	insert(t, s, newNode("acme", "n1", 0))
	err := s.View(func(tx *Tx) error {
		_, _, err := tx.NodeList("acme", NodeQuery{Limit: 0})
		return err
	})
	var bad *fault.Invalid
	require.ErrorAs(t, err, &bad)
	require.Equal(t, "limit", bad.Field)
}
