package nodes_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

func typed(typ string, labels ...string) func(*nodes.NodeSpec) {
	return func(s *nodes.NodeSpec) { s.Type, s.Labels = typ, labels }
}
func target(sub string) func(*nodes.NodeSpec) { return func(s *nodes.NodeSpec) { s.Target = &sub } }
func priority(p int64) func(*nodes.NodeSpec)  { return func(s *nodes.NodeSpec) { s.Priority = &p } }

// Claim-next hands out the highest priority first, and only nodes its
// filters match: every asked type is one of Types, every asked label is
// carried, and a node reserved to another identity is never offered.
func TestClaimNextFiltersAndOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t,
		spec("build-gpu", "q", typed("build", "gpu", "linux")),
		spec("build-cpu", "q", typed("build", "linux")),
		spec("test", "q", typed("test", "gpu")),
		spec("for-bob", "q", typed("deploy"), target("bob"), priority(100)),
		spec("urgent", "q", typed("test"), priority(10)),
	)
	next := func(c nodes.Caller, types, labels []string) string {
		return b.claimNext(t, nodes.ClaimNextParams{Caller: c, Queue: "q", Types: types, Labels: labels})
	}
	require.Equal(t, "build-gpu", next(b.alice, []string{"build"}, []string{"gpu"}))
	require.Empty(t, next(b.alice, []string{"build"}, []string{"gpu"}))
	require.Empty(t, next(b.alice, []string{"deploy"}, nil), "reserved to bob")
	require.Equal(t, "for-bob", next(b.bob, nil, nil), "priority 100 first")
	require.Equal(t, "urgent", next(b.alice, nil, nil), "priority 10 next")
	require.Equal(t, "test", next(b.alice, []string{"test", "lint"}, nil))
	require.Equal(t, "build-cpu", next(b.alice, nil, []string{"linux"}))
	require.Empty(t, next(b.alice, nil, nil))

	for _, id := range []string{"build-gpu", "build-cpu", "test", "urgent"} {
		require.Equal(t, "alice", b.get(t, id).Lease.By, id)
	}
	require.EqualValues(t, 4, b.leases.LiveCount("acme", "alice"))

	_, err := b.nodes.ClaimNext(context.Background(), nodes.ClaimNextParams{Caller: b.alice, Queue: "bad queue!"})
	var inv *fault.Invalid
	require.ErrorAs(t, err, &inv)
}

// A paused queue hands out nothing, and resuming it hands out again; a
// queue at its max_running hands out nothing until a run ends.
func TestClaimNextPauseAndMaxRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.create(t, spec("a", "q"), spec("b", "q"), spec("c", "q"))
	yes, no, one := true, false, int64(1)

	_, err := b.nodes.SetQueue(ctx, b.head, "q", nodes.QueueChange{Paused: &yes})
	require.NoError(t, err)
	require.Empty(t, b.claimNext(t, nodes.ClaimNextParams{Caller: b.alice, Queue: "q"}))
	require.Equal(t, records.StatusQueued, b.status(t, "a"))

	_, err = b.nodes.SetQueue(ctx, b.head, "q", nodes.QueueChange{Paused: &no, MaxRunning: &one})
	require.NoError(t, err)
	first := b.claimNext(t, nodes.ClaimNextParams{Caller: b.alice, Queue: "q"})
	require.NotEmpty(t, first)
	got, err := b.nodes.ClaimNext(ctx, nodes.ClaimNextParams{Caller: b.bob, Queue: "q", Max: 3})
	require.NoError(t, err)
	require.Empty(t, got, "max_running 1 is taken")

	_, err = b.nodes.Complete(ctx, nodes.CompleteParams{HolderParams: holder(b.alice, first)})
	require.NoError(t, err)
	got, err = b.nodes.ClaimNext(ctx, nodes.ClaimNextParams{Caller: b.bob, Queue: "q", Max: 3})
	require.NoError(t, err)
	require.Len(t, got, 1, "room for one more, not three")

	q, err := b.nodes.Queue("acme", "q")
	require.NoError(t, err)
	require.False(t, q.Paused)
	require.EqualValues(t, 1, q.MaxRunning)
}

// A long poll answers as soon as a matching node turns ready, and with
// nothing once WaitEnd closes (the server stopping).
func TestClaimNextLongPollWakes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	type answer struct {
		id  string
		err error
	}
	poll := func(p nodes.ClaimNextParams) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			got, err := b.nodes.ClaimNext(ctx, p)
			a := answer{err: err}
			if len(got) > 0 {
				a.id = got[0].Node.ID
			}
			ch <- a
		}()
		return ch
	}
	woke := poll(nodes.ClaimNextParams{Caller: b.alice, Queue: "q", Types: []string{"wanted"}, Wait: nodes.MaxWait})
	b.waitForClaimer(t, "q")
	b.create(t, spec("other", "q", typed("unwanted")))
	b.create(t, spec("wanted", "q", typed("wanted")))
	a := <-woke
	require.NoError(t, a.err)
	require.Equal(t, "wanted", a.id)
	require.Equal(t, records.StatusQueued, b.status(t, "other"), "outside the poll's filter")

	end := make(chan struct{})
	ended := poll(nodes.ClaimNextParams{Caller: b.alice, Queue: "q", Types: []string{"none"}, Wait: nodes.MaxWait, WaitEnd: end})
	b.waitForClaimer(t, "q")
	close(end)
	a = <-ended
	require.NoError(t, a.err)
	require.Empty(t, a.id)
}

// waitForClaimer returns once a claim-next long poll waits on queue q.
func (b *bundle) waitForClaimer(t *testing.T, q string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if waiting, _ := b.store.ReadyWaiters("acme", q); waiting > 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "no long poll waits")
		runtime.Gosched()
	}
}
