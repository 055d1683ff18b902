package graphstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/records"
)

// finish sets node id to status (a finished one) at the store's now.
func finish(t *testing.T, s *Store, id string, st records.Status) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		n, err := tx.NodeGet("acme", id)
		if err != nil {
			return err
		}
		n.Status = st
		n.LastFence += 3 // as if it ran three times
		return tx.NodePut(n)
	}))
}

// Retention removes finished nodes (with comments, retired and live edges
// among finished nodes, event pointers) and old events in order, keeps a
// finished node a live node still depends on, never reuses a seq or a fence,
// and leaves a store tether check finds clean, before and after a restart.
func TestRetentionRemovesWhatIsPastItAndNothingElse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()
	for i := range 10 {
		insert(t, s, newNode("acme", fmt.Sprint("old", i), 0))
	}
	insert(t, s, newNode("acme", "live", 0))
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		// live waits for old0; old1 and old2 are linked, both finished soon.
		if err := tx.EdgeInsert("acme", &records.Edge{From: "live", Type: EdgeDependsOn, To: "old0"}); err != nil {
			return err
		}
		if err := tx.EdgeInsert("acme", &records.Edge{From: "old1", Type: "relates", To: "old2"}); err != nil {
			return err
		}
		if err := tx.EdgeInsert("acme", &records.Edge{From: "old3", Type: "relates", To: "old4"}); err != nil {
			return err
		}
		e, err := tx.EdgeGet("acme", "old3", "relates", "old4")
		if err != nil {
			return err
		}
		return tx.EdgeRetire("acme", e, "x", nil)
	}))
	_, err = addComment(s, "old5")
	require.NoError(t, err)
	for i := range 10 {
		finish(t, s, fmt.Sprint("old", i), records.StatusDone)
	}
	clk.Advance(time.Hour)
	insert(t, s, newNode("acme", "young", 0))
	finish(t, s, "young", records.StatusDone)

	cutoff := clk.Now().Add(-30 * time.Minute)
	var removed, groups int
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		var err error
		removed, _, err = tx.PurgeFinished("acme", cutoff, 100)
		if err != nil {
			return err
		}
		groups, _, err = tx.PurgeEvents("acme", cutoff, 100)
		return err
	}))
	require.Equal(t, 9, removed, "every old node but old0, which live still depends on")
	require.Positive(t, groups)
	horizon := s.EventHorizon("acme")
	require.Positive(t, horizon)
	require.NoError(t, s.View(func(tx *Tx) error {
		for i := 1; i < 10; i++ {
			_, err := tx.NodeGet("acme", fmt.Sprint("old", i))
			require.Error(t, err, "old%d", i)
		}
		for _, id := range []string{"old0", "live", "young"} {
			_, err := tx.NodeGet("acme", id)
			require.NoError(t, err, id)
		}
		evs, err := tx.EventsAfter("acme", 0, 1000)
		require.NoError(t, err)
		require.Greater(t, evs[0].Seq, horizon, "events from the horizon on are kept")
		for i := 1; i < 10; i++ {
			for _, tag := range []byte{records.TagComment, records.TagNodeEvent, records.TagRetiredOut, records.TagRetiredIn} {
				prefix := records.NewKey(tag, "acme").Str(fmt.Sprint("old", i)).Bytes()
				require.NoError(t, tx.kv.Scan(prefix, nil, false, false, func(k, _ []byte) (bool, error) {
					t.Errorf("%q is left of removed node old%d", k, i)
					return true, nil
				}))
			}
		}
		return nil
	}))
	require.NoError(t, s.Close())
	rep, err := Check(dir)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	require.Equal(t, 3, rep.Nodes)

	// After a restart: the horizon holds, the queue is rebuilt, seqs go on,
	// and a node re-created under a removed id starts above its fences.
	s, err = Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	require.Equal(t, horizon, s.EventHorizon("acme"))
	clk.Advance(2 * time.Hour)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		if _, _, err := tx.PurgeFinished("acme", clk.Now(), 100); err != nil {
			return err
		}
		_, _, err := tx.PurgeEvents("acme", clk.Now(), 100)
		return err
	}))
	require.NoError(t, s.View(func(tx *Tx) error {
		evs, err := tx.EventsAfter("acme", 0, 1000)
		require.NoError(t, err)
		require.Empty(t, evs, "every event is past retention")
		_, err = tx.NodeGet("acme", "young")
		require.Error(t, err, "young finished more than the cutoff ago")
		return nil
	}))
	last := s.EventHorizon("acme")
	insert(t, s, newNode("acme", "old7", 0))
	require.NoError(t, s.View(func(tx *Tx) error {
		n, err := tx.NodeGet("acme", "old7")
		require.NoError(t, err)
		require.GreaterOrEqual(t, n.LastFence, uint64(3), "fences start above those of removed nodes")
		evs, err := tx.EventsAfter("acme", 0, 10)
		require.NoError(t, err)
		require.Greater(t, evs[0].Seq, last, "a seq is never handed out twice")
		return nil
	}))
	require.NoError(t, s.Close())
	rep, err = Check(dir)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
}

func addComment(s *Store, id string) (*records.Comment, error) {
	c := &records.Comment{ID: "c-" + id, By: "x", Body: "hello"}
	return c, s.Update(context.Background(), func(tx *Tx) error {
		n, err := tx.NodeGet("acme", id)
		if err != nil {
			return err
		}
		return tx.CommentInsert(n, c)
	})
}

// The ready mirror forgets a queue once nothing is in it or waits on it, so
// client-chosen queue names do not pile up in memory.
func TestReadyMirrorForgetsIdleQueues(t *testing.T) {
	t.Parallel()
	s, clk := setup(t)
	for i := range 100 {
		_, stop := s.ReadyWatch("acme", fmt.Sprint("poll-", i), indexes.ReadyFilter{Sub: "w"})
		stop()
	}
	n := newNode("acme", "x", 0)
	n.Queue = "busy"
	insert(t, s, n)
	require.Equal(t, 1, s.ready.QueuesHeld(), "only the queue that holds a node is kept")

	finish(t, s, "x", records.StatusDone)
	clk.Advance(time.Hour)
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		_, _, err := tx.PurgeFinished("acme", clk.Now(), 10)
		return err
	}))
	require.Eventually(t, func() bool {
		return s.ready.QueuesHeld() == 0
	}, 5*time.Second, time.Millisecond, "a queue whose last node retention removed is forgotten")
}
