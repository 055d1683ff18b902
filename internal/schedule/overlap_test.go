package schedule

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/records"
)

// Each overlap policy, on a second fire while the first run's node is
// still queued.
func TestOverlapPolicies(t *testing.T) {
	t.Parallel()
	t.Run("skip", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.create(t, "s", withOverlap(OverlapSkip))
		r.fireAt(t, "s", minute(0))
		r.fireAt(t, "s", minute(1))
		r.fireAt(t, "s", minute(2))
		runs := r.runs(t, "s")
		require.Len(t, runs, 2, "one run, then one record for the skipped row")
		require.Len(t, runs[0].Nodes, 1)
		require.Equal(t, RunQueued, runs[0].Status)
		require.Equal(t, SkipOverlap, runs[1].Skipped)
		require.EqualValues(t, 2, runs[1].Count)
		require.Equal(t, minute(1), runs[1].ScheduledAt)
		require.Equal(t, minute(2), *runs[1].LastScheduledAt)

		// Once the run is over, the next fire makes a run again.
		r.finish(t, runs[0].Nodes[0], true)
		r.fireAt(t, "s", minute(3))
		runs = r.runs(t, "s")
		require.Len(t, runs, 3)
		require.Len(t, runs[2].Nodes, 1)
		require.Equal(t, minute(3), runs[2].ScheduledAt)
	})
	t.Run("allow", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.create(t, "s", withOverlap(OverlapAllow))
		r.fireAt(t, "s", minute(0))
		r.fireAt(t, "s", minute(1))
		runs := r.runs(t, "s")
		require.Len(t, runs, 2)
		for _, run := range runs {
			require.Empty(t, run.After)
			require.Equal(t, records.StatusQueued, r.node(t, run.Nodes[0]).Status)
		}
		// Both are claimable at once.
		r.finish(t, runs[1].Nodes[0], true)
		r.finish(t, runs[0].Nodes[0], true)
	})
	t.Run("queue", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.create(t, "s", withOverlap(OverlapQueue))
		r.fireAt(t, "s", minute(0))
		r.fireAt(t, "s", minute(1))
		r.fireAt(t, "s", minute(2))
		runs := r.runs(t, "s")
		require.Len(t, runs, 3, "queue never skips")
		require.Equal(t, runs[0].Nodes, runs[1].After)
		require.Equal(t, runs[1].Nodes, runs[2].After)
		second := runs[1].Nodes[0]
		waiting, err := r.nodes.Get("acme", second)
		require.NoError(t, err)
		require.False(t, waiting.Ready, "waits for the run before it")

		// A failed first run does not cancel the queued one (on_fail: ignore).
		r.finish(t, runs[0].Nodes[0], false)
		require.Equal(t, records.StatusQueued, r.node(t, second).Status)
		r.finish(t, second, true)
	})
	t.Run("buffer_one", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.create(t, "s", withOverlap(OverlapBufferOne))
		r.fireAt(t, "s", minute(0))
		r.fireAt(t, "s", minute(1))
		r.fireAt(t, "s", minute(2))
		runs := r.runs(t, "s")
		require.Len(t, runs, 3)
		require.Equal(t, runs[0].Nodes, runs[1].After, "one run buffered behind the first")
		require.Equal(t, SkipOverlap, runs[2].Skipped, "and no second one")
		require.Equal(t, minute(2), runs[2].ScheduledAt)
	})
	t.Run("cancel_other", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.create(t, "s", withOverlap(OverlapCancelOther))
		r.fireAt(t, "s", minute(0))
		first := r.runs(t, "s")[0].Nodes[0]
		_, err := r.leases.Claim(t.Context(), leaseClaim(first))
		require.NoError(t, err)
		r.fireAt(t, "s", minute(1))
		runs := r.runs(t, "s")
		require.Len(t, runs, 2)
		require.Equal(t, []string{first}, runs[1].Cancelled)
		n := r.node(t, first)
		require.Equal(t, records.StatusCancelled, n.Status)
		require.Nil(t, n.Lease, "the running node's lease ended")
		require.Equal(t, RunCancelled, runs[0].Status)
		require.Equal(t, records.StatusQueued, r.node(t, runs[1].Nodes[0]).Status)
	})
}
