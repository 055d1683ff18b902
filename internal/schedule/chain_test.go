package schedule

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

// A run with a chain makes its steps in order, each depending on the one
// before; when a step fails, the steps after it are stranded, and the
// next fire's settle cancels them and counts the run as one failure.
func TestChainStrandedStepsAreCancelled(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	q := "q"
	r.create(t, "s", func(st *Settings) {
		st.Chain = []nodes.NodeSpec{{Type: "step2", Queue: &q}, {Type: "step3", Queue: &q}}
	})
	r.fireAt(t, "s", minute(0))
	run := r.runs(t, "s")[0]
	require.Len(t, run.Nodes, 3)
	for i, id := range run.Nodes[1:] {
		v, err := r.nodes.Get("acme", id)
		require.NoError(t, err)
		require.False(t, v.Ready, "step %d waits for the step before it", i+2)
	}

	r.finish(t, run.Nodes[0], false)
	for _, id := range run.Nodes[1:] {
		require.Equal(t, records.StatusQueued, r.node(t, id).Status, "stranded, not yet cancelled")
	}
	r.fireAt(t, "s", minute(1))
	for _, id := range run.Nodes[1:] {
		require.Equal(t, records.StatusCancelled, r.node(t, id).Status)
	}
	runs := r.runs(t, "s")
	require.Equal(t, RunFailed, runs[0].Status)
	require.Len(t, runs[1].Nodes, 3, "the run was over: the next one was made")
	v, err := r.sched.Get("acme", "s")
	require.NoError(t, err)
	require.EqualValues(t, 1, v.Failures)
}

// A one-shot schedule fires once at its instant and is then gone; its
// node stays.
func TestOneShotFiresOnceAndIsRemoved(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	at, id, q := t0.Add(10*time.Second), "once", "q"
	_, err := r.sched.Create(context.Background(), "acme", "head", Settings{ID: &id, At: &at, Template: &nodes.NodeSpec{Type: "job", Queue: &q}})
	require.NoError(t, err)
	r.fireAt(t, id, at)

	_, err = r.sched.Get("acme", id)
	require.ErrorAs(t, err, new(*fault.NotFound))
	made, _, err := r.nodes.List("acme", graphstore.NodeQuery{Type: "job", Limit: 10}, nil)
	require.NoError(t, err)
	require.Len(t, made, 1)
	require.Equal(t, graphstore.SchedulePrefix+id, made[0].CreatedBy)
	require.Equal(t, at, made[0].CreatedAt)
}
