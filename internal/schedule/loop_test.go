package schedule

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The firing loop says where it sleeps (Idle): towards the earliest
// schedule's next fire, and, once no schedule is due any more, towards
// nothing. A pause does not wake it (the stale wake-up finds nothing due).
// A test that nothing fired waits for that instead of sleeping.
func TestLoopSleepsTowardsTheEarliestFire(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	r.sched.TestSignals.Idle.Init(t)
	v := r.create(t, "s")
	require.Equal(t, minute(0), *v.NextFireAt)
	r.sched.TestSignals.Idle.WaitFor(t, func(at time.Time) bool { return at.Equal(minute(0)) })

	r.fireAt(t, "s", minute(0))
	r.sched.TestSignals.Idle.WaitFor(t, func(at time.Time) bool { return at.Equal(minute(1)) })
	require.Len(t, r.runs(t, "s"), 1)

	_, err := r.sched.SetEnabled(ctx, "acme", "s", "head", false, "")
	require.NoError(t, err)
	r.advanceTo(minute(1))
	r.sched.TestSignals.Idle.WaitFor(t, func(at time.Time) bool { return at.IsZero() })
	r.advanceTo(minute(3))
	r.create(t, "beat", withOverlap(OverlapAllow)) // wakes the loop at 03:08
	r.sched.TestSignals.Idle.WaitFor(t, func(at time.Time) bool { return at.Equal(minute(4)) })
	require.Len(t, r.runs(t, "s"), 1, "paused: nothing fired while the clock ran past 03:06 and 03:07")
}
