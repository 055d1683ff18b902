package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// down stops the firing loop, lets the clock run to at while no loop is
// there, and starts a new one, as a server restart does; it waits for the
// new loop's first pass on id.
func (r *rig) down(t *testing.T, id string, at time.Time) {
	t.Helper()
	r.sched.Stop()
	r.advanceTo(at)
	r.startLoop(t)
	r.passed(t, id)
}

// Fires missed while no loop ran, in each catch-up setting: six fires fell
// due (03:05 to 03:10) and the server is back at 03:10:30.
func TestCatchupAfterDowntime(t *testing.T) {
	t.Parallel()
	back := minute(5).Add(30 * time.Second)
	t.Run("window", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.create(t, "s", withOverlap(OverlapAllow), withCatchup(CatchupAll)) // window: 1 min
		r.down(t, "s", back)
		runs := r.runs(t, "s")
		require.Len(t, runs, 2)
		require.Equal(t, SkipMissed, runs[0].Skipped, "older than the window")
		require.EqualValues(t, 5, runs[0].Count)
		require.Equal(t, minute(0), runs[0].ScheduledAt)
		require.Equal(t, minute(4), *runs[0].LastScheduledAt)
		require.Equal(t, minute(5), runs[1].ScheduledAt)
		require.Len(t, runs[1].Nodes, 1)
		v, err := r.sched.Get("acme", "s")
		require.NoError(t, err)
		require.Equal(t, minute(6), *v.NextFireAt)
	})
	t.Run("all", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.create(t, "s", withOverlap(OverlapAllow), withCatchup(CatchupAll), withWindow(time.Hour))
		r.down(t, "s", back)
		runs := r.runs(t, "s")
		require.Len(t, runs, 6)
		for i, run := range runs {
			require.Empty(t, run.Skipped)
			require.Equal(t, minute(i), run.ScheduledAt)
			require.Len(t, run.Nodes, 1)
		}
	})
	t.Run("one", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		r.create(t, "s", withOverlap(OverlapAllow), withCatchup(CatchupOne), withWindow(time.Hour))
		r.down(t, "s", back)
		runs := r.runs(t, "s")
		require.Len(t, runs, 1)
		require.Equal(t, minute(5), runs[0].ScheduledAt, "the latest")
		require.EqualValues(t, 5, runs[0].Coalesced)
		require.Len(t, runs[0].Nodes, 1)
	})
}

// After failed runs, fires are skipped until the backoff step for the
// number of failures in a row has passed since the last failure; a done
// run resets the count.
func TestFailureBackoff(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.create(t, "s", withBackoff(150_000, 300_000)) // 2.5 min, then 5 min
	r.fireAt(t, "s", minute(0))
	first := r.runs(t, "s")[0].Nodes[0]
	r.advanceTo(minute(0).Add(10 * time.Second))
	r.finish(t, first, false) // failure 1 at 03:05:10: backoff to 03:07:40

	r.fireAt(t, "s", minute(1))
	r.fireAt(t, "s", minute(2))
	v, err := r.sched.Get("acme", "s")
	require.NoError(t, err)
	require.EqualValues(t, 1, v.Failures)
	require.Equal(t, minute(2).Add(40*time.Second), *v.BackoffUntil)
	r.fireAt(t, "s", minute(3))
	runs := r.runs(t, "s")
	require.Len(t, runs, 3)
	require.Equal(t, RunFailed, runs[0].Status)
	require.Equal(t, SkipBackoff, runs[1].Skipped)
	require.EqualValues(t, 2, runs[1].Count, "03:06 and 03:07")
	require.Equal(t, minute(3), runs[2].ScheduledAt)

	r.finish(t, runs[2].Nodes[0], false) // failure 2 at 03:08:00: backoff to 03:13
	for i := 4; i <= 8; i++ {
		r.fireAt(t, "s", minute(i))
	}
	runs = r.runs(t, "s")
	require.Len(t, runs, 5)
	require.Equal(t, SkipBackoff, runs[3].Skipped)
	require.EqualValues(t, 4, runs[3].Count, "03:09 to 03:12")
	require.Equal(t, minute(8), runs[4].ScheduledAt)

	r.finish(t, runs[4].Nodes[0], true)
	r.fireAt(t, "s", minute(9))
	v, err = r.sched.Get("acme", "s")
	require.NoError(t, err)
	require.Zero(t, v.Failures, "a done run resets the count")
	require.Nil(t, v.BackoffUntil)
	require.Len(t, r.runs(t, "s")[5].Nodes, 1)
}
