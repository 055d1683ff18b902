package schedule

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
)

// A paused schedule makes no fire, not even as catch-up once resumed: it
// next fires at the first instant after the resume. A manual trigger runs
// it while paused; a trigger that skip would record is refused.
func TestPauseResumeTrigger(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	r.create(t, "s", withOverlap(OverlapSkip))
	// beat fires beside s: its passes prove the loop ran at each instant.
	r.create(t, "beat", withOverlap(OverlapAllow))

	v, err := r.sched.SetEnabled(ctx, "acme", "s", "head", false, "maintenance")
	require.NoError(t, err)
	require.False(t, v.Enabled)
	require.Equal(t, "maintenance", v.Note)
	r.fireAt(t, "beat", minute(0))
	r.fireAt(t, "beat", minute(1))
	require.Empty(t, r.runs(t, "s"), "paused: no fire made")
	require.Len(t, r.runs(t, "beat"), 2)

	run, err := r.sched.Trigger(ctx, "acme", "s", "head", nil)
	require.NoError(t, err)
	require.Equal(t, TriggerManual, run.Trigger)
	require.Equal(t, "head", run.By)
	require.Len(t, run.Nodes, 1)
	require.Equal(t, RunQueued, run.Status)

	_, err = r.sched.Trigger(ctx, "acme", "s", "head", nil)
	var conflict *fault.Conflict
	require.ErrorAs(t, err, &conflict, "skip refuses a trigger while the last run is live")
	bad := Overlap("sometimes")
	_, err = r.sched.Trigger(ctx, "acme", "s", "head", &bad)
	var inv *fault.Invalid
	require.ErrorAs(t, err, &inv)
	require.Len(t, r.runs(t, "s"), 1, "refused triggers record nothing")
	allow := OverlapAllow
	_, err = r.sched.Trigger(ctx, "acme", "s", "head", &allow)
	require.NoError(t, err)
	require.Len(t, r.runs(t, "s"), 2)

	r.advanceTo(minute(1).Add(30 * time.Second))
	v, err = r.sched.SetEnabled(ctx, "acme", "s", "head", true, "back")
	require.NoError(t, err)
	require.True(t, v.Enabled)
	require.Equal(t, minute(2), *v.NextFireAt, "03:06 was paused: not caught up")
	for _, run := range r.runs(t, "s") {
		r.finish(t, run.Nodes[0], true)
	}
	r.fireAt(t, "s", minute(2))
	runs := r.runs(t, "s")
	require.Len(t, runs, 3)
	require.Equal(t, TriggerSchedule, runs[2].Trigger)
	require.Equal(t, minute(2), runs[2].ScheduledAt)
}
