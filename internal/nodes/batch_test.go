package nodes_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

func (b *bundle) batch(t *testing.T, c nodes.Caller, ops ...nodes.BatchOp) []nodes.BatchResult {
	t.Helper()
	results, err := b.nodes.Batch(context.Background(), c, ops)
	require.NoError(t, err)
	require.Len(t, results, len(ops))
	for i, r := range results {
		require.Equal(t, ops[i].Kind(), r.Kind, "result %d is op %d's", i, i)
		require.Equal(t, ops[i].NodeID(), r.NodeID, "result %d is op %d's", i, i)
	}
	return results
}

// requireFault holds err to a fault error of type E.
func requireFault[E error](t *testing.T, err error) {
	t.Helper()
	var want E
	require.True(t, errors.As(err, &want), "want a %T, got %v", want, err)
}

func pct(v float64) *float64 { return &v }

// Each op is answered on its own, in the order given: one op's refusal is a
// fault error in its own result and fails nothing else, whatever its kind.
func TestBatchAnswersEachOpInOrderAndAnOpsErrorIsItsOwn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, spec("renewed", "q"), spec("extended", "q"), spec("released", "q"), spec("completed", "q"),
		spec("failed", "q"), spec("progressed", "q"), spec("bobs", "q"))
	for _, id := range []string{"renewed", "extended", "released", "completed", "failed", "progressed"} {
		b.claim(t, b.alice, id)
	}
	b.claim(t, b.bob, "bobs")
	b.clk.Advance(10 * time.Second)
	no := false

	results := b.batch(t, b.alice,
		nodes.RenewOp(holder(b.alice, "renewed")),
		nodes.CompleteOp(nodes.CompleteParams{HolderParams: holder(b.alice, "missing")}),
		nodes.ExtendOp(holder(b.alice, "extended"), time.Minute),
		nodes.RenewOp(holder(b.alice, "bobs")),
		nodes.ReleaseOp(leasing.ReleaseParams{HolderParams: holder(b.alice, "released"), Reason: "later"}),
		nodes.ProgressOp(nodes.ProgressParams{HolderParams: holder(b.alice, "progressed"), Pct: pct(101)}),
		nodes.CompleteOp(nodes.CompleteParams{HolderParams: holder(b.alice, "completed"), Result: []byte(`{"ok":true}`)}),
		nodes.FailOp(nodes.FailParams{HolderParams: holder(b.alice, "failed"), Error: "boom", Requeue: &no}),
		nodes.ProgressOp(nodes.ProgressParams{HolderParams: holder(b.alice, "progressed"), Pct: pct(50)}),
	)

	now := b.clk.Now()
	require.NoError(t, results[0].Err)
	require.Equal(t, now.Add(30*time.Second).UnixMilli(), results[0].Lease.ExpiresAt.UnixMilli(), "renewed for the default TTL from now")
	require.Equal(t, records.StatusRunning, results[0].Node.Status)
	requireFault[*fault.NotFound](t, results[1].Err)
	require.NoError(t, results[2].Err)
	require.Equal(t, now.Add(-10*time.Second).Add(30*time.Second+time.Minute).UnixMilli(), results[2].Lease.ExpiresAt.UnixMilli())
	requireFault[*fault.LeaseLost](t, results[3].Err)
	require.NoError(t, results[4].Err)
	require.Equal(t, records.StatusQueued, results[4].Node.Status)
	requireFault[*fault.Invalid](t, results[5].Err)
	require.NoError(t, results[6].Err)
	require.Equal(t, records.StatusDone, results[6].Node.Status)
	require.NoError(t, results[7].Err)
	require.Equal(t, records.StatusFailed, results[7].Node.Status)
	require.NoError(t, results[8].Err)
	require.EqualValues(t, 50, *results[8].Node.Progress.Pct)
	require.Equal(t, now.Add(30*time.Second).UnixMilli(), results[8].Lease.ExpiresAt.UnixMilli(), "progress renews the lease")

	// The effects are the calls'; the refused ops changed nothing.
	require.Equal(t, records.StatusDone, b.status(t, "completed"))
	require.Equal(t, records.StatusFailed, b.status(t, "failed"))
	require.Equal(t, records.StatusQueued, b.status(t, "released"))
	require.Equal(t, "bob", b.get(t, "bobs").Lease.By)
	require.NotContains(t, b.eventTypes(t, "bobs"), records.EventReleased)
}

// A batch acts as its caller, whatever its ops' params name: a worker's op
// on another's lease is refused, and a dispatcher overrides a lease only
// where the op's endpoint lets it (release, complete, fail; not renew).
func TestBatchActsAsItsCaller(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, spec("a", "q"), spec("b", "q"), spec("c", "q"))
	for _, id := range []string{"a", "b", "c"} {
		b.claim(t, b.alice, id)
	}

	posing := holder(b.alice, "a") // names alice, sent by bob
	results := b.batch(t, b.bob, nodes.CompleteOp(nodes.CompleteParams{HolderParams: posing}))
	requireFault[*fault.LeaseLost](t, results[0].Err)
	require.Equal(t, records.StatusRunning, b.status(t, "a"))

	results = b.batch(t, b.head,
		nodes.RenewOp(holder(b.head, "a")),
		nodes.CompleteOp(nodes.CompleteParams{HolderParams: holder(b.head, "b")}),
		nodes.ReleaseOp(leasing.ReleaseParams{HolderParams: holder(b.head, "c")}),
	)
	requireFault[*fault.LeaseLost](t, results[0].Err)
	require.NoError(t, results[1].Err)
	require.NoError(t, results[2].Err)
	require.Equal(t, records.StatusDone, b.status(t, "b"))
	require.Equal(t, records.StatusQueued, b.status(t, "c"))
}

// Ops on one node run in the order given, between ops on other nodes: a
// complete after two progresses sees both, and would refuse them had it run
// first.
func TestBatchRunsOneNodesOpsInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ops []nodes.BatchOp
	for i := range 20 {
		id := fmt.Sprintf("n%02d", i)
		b.create(t, spec(id, "q"))
		b.claim(t, b.alice, id)
		ops = append(ops, nodes.ProgressOp(nodes.ProgressParams{HolderParams: holder(b.alice, id), Pct: pct(10)}))
	}
	for i := range 20 {
		id := fmt.Sprintf("n%02d", i)
		ops = append(ops,
			nodes.ProgressOp(nodes.ProgressParams{HolderParams: holder(b.alice, id), Pct: pct(20)}),
			nodes.CompleteOp(nodes.CompleteParams{HolderParams: holder(b.alice, id)}))
	}

	for _, r := range b.batch(t, b.alice, ops...) {
		require.NoError(t, r.Err, r.NodeID)
	}
	for i := range 20 {
		id := fmt.Sprintf("n%02d", i)
		require.Equal(t, records.StatusDone, b.status(t, id))
		evs, err := b.nodes.NodeEvents("acme", id, 0, 100)
		require.NoError(t, err)
		var pcts []any
		for _, e := range evs {
			if e.Type == records.EventProgress {
				pcts = append(pcts, e.Data.Map()["pct"])
			}
		}
		require.Equal(t, []any{10.0, 20.0}, pcts, "%s: its progresses in the order given", id)
		require.Equal(t, records.EventCompleted, evs[len(evs)-1].Type, "%s: its complete last", id)
	}
}

// Nothing a batch answers is ahead of the log: when Batch returns, every
// write it answered is durable, and so shown to readers (who see nothing
// before it is), on both of its paths (completes many per transaction, and
// any other ops one goroutine per node).
func TestBatchAnswersOnceEveryWriteIsDurable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const rounds, per = 5, 40
	for round := range rounds {
		var completes, mixed []nodes.BatchOp
		for i := range per {
			c, m := fmt.Sprintf("c%d-%02d", round, i), fmt.Sprintf("m%d-%02d", round, i)
			b.create(t, spec(c, "q"), spec(m, "q"))
			b.claim(t, b.alice, c)
			b.claim(t, b.alice, m)
			completes = append(completes, nodes.CompleteOp(nodes.CompleteParams{HolderParams: holder(b.alice, c)}))
			if i%2 == 0 {
				mixed = append(mixed, nodes.FailOp(nodes.FailParams{HolderParams: holder(b.alice, m), Error: "boom"}))
			} else {
				mixed = append(mixed, nodes.ReleaseOp(leasing.ReleaseParams{HolderParams: holder(b.alice, m)}))
			}
		}
		for _, ops := range [][]nodes.BatchOp{completes, mixed} {
			results := b.batch(t, b.alice, ops...)
			// Read at once, with nothing between the answer and the reads.
			for _, r := range results {
				require.NoError(t, r.Err)
				got := b.get(t, r.NodeID)
				require.Equal(t, r.Node.Status, got.Status, "%s: answered, so shown", r.NodeID)
				require.Equal(t, r.Node.Version, got.Version, "%s: answered, so shown", r.NodeID)
			}
		}
	}
}

// An op that panics is that op's internal error (not a fault: the client
// gets a generic one), and the batch runs on: the ops beside it, on its
// goroutine's node and on others, are answered as ever. A BatchOp made by
// no constructor panics, as a programming error.
func TestBatchPanickingOpIsItsOwnInternalError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, spec("a", "q"), spec("b", "q"))
	b.claim(t, b.alice, "a")
	b.claim(t, b.alice, "b")

	results, err := b.nodes.Batch(context.Background(), b.alice, []nodes.BatchOp{
		nodes.RenewOp(holder(b.alice, "a")),
		{},
		nodes.CompleteOp(nodes.CompleteParams{HolderParams: holder(b.alice, "b")}),
		nodes.CompleteOp(nodes.CompleteParams{HolderParams: holder(b.alice, "a")}),
	})
	require.NoError(t, err)
	require.NoError(t, results[0].Err)
	require.ErrorContains(t, results[1].Err, "panic in a batch op")
	var invalid *fault.Invalid
	var lost *fault.LeaseLost
	var notFound *fault.NotFound
	require.False(t, errors.As(results[1].Err, &invalid) || errors.As(results[1].Err, &lost) || errors.As(results[1].Err, &notFound),
		"an internal error, not a refusal")
	require.NoError(t, results[2].Err)
	require.NoError(t, results[3].Err)
	require.Equal(t, records.StatusDone, b.status(t, "a"))
	require.Equal(t, records.StatusDone, b.status(t, "b"))
}

// A batch of completes only runs many per transaction; its answers are
// still each op's own, in order, and fail alone (a stale fence, a node
// already done by an earlier op of the batch, usage refused).
func TestBatchOfCompletesAnswersEachOnItsOwn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ops []nodes.BatchOp
	for i := range nodes.CompleteChunk + 10 {
		id := fmt.Sprintf("n%03d", i)
		b.create(t, spec(id, "q"))
		fence := b.claim(t, b.alice, id).Lease.Fence
		hp := holder(b.alice, id)
		switch i {
		case 3:
			hp.Fence = fence + 1
		case 7:
			ops = append(ops, nodes.CompleteOp(nodes.CompleteParams{HolderParams: hp, Usage: map[string]float64{"": 1}}))
		}
		ops = append(ops, nodes.CompleteOp(nodes.CompleteParams{HolderParams: hp, Result: []byte(`{"i":1}`)}))
	}

	results := b.batch(t, b.alice, ops...)
	for i, r := range results {
		switch {
		case r.NodeID == "n003":
			requireFault[*fault.LeaseLost](t, r.Err)
			require.Equal(t, records.StatusRunning, b.status(t, "n003"))
		case r.NodeID == "n007" && results[i+1].NodeID == "n007":
			requireFault[*fault.Invalid](t, r.Err)
		default:
			require.NoError(t, r.Err, r.NodeID)
			require.Equal(t, records.StatusDone, r.Node.Status)
			require.Equal(t, records.StatusDone, b.status(t, r.NodeID))
		}
	}
}

// A fail's answer carries its node's view: a retried node at rest shows
// its readiness.
func TestBatchFailAnswersWithTheNodesView(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, spec("a", "q"))
	b.claim(t, b.alice, "a")
	results := b.batch(t, b.alice, nodes.FailOp(nodes.FailParams{HolderParams: holder(b.alice, "a"), Error: "boom"}))
	require.NoError(t, results[0].Err)
	require.Equal(t, records.StatusQueued, results[0].Node.Status)
	require.True(t, results[0].Node.Ready, "requeued with no backoff: ready at once")
}

// More than MaxBatchOps ops are refused whole, and change nothing.
func TestBatchRefusesTooManyOps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, spec("a", "q"))
	b.claim(t, b.alice, "a")
	ops := make([]nodes.BatchOp, nodes.MaxBatchOps+1)
	for i := range ops {
		ops[i] = nodes.CompleteOp(nodes.CompleteParams{HolderParams: holder(b.alice, "a")})
	}
	results, err := b.nodes.Batch(context.Background(), b.alice, ops)
	requireFault[*fault.Invalid](t, err)
	require.Nil(t, results)
	require.Equal(t, records.StatusRunning, b.status(t, "a"))

	results, err = b.nodes.Batch(context.Background(), b.alice, nil)
	require.NoError(t, err)
	require.Empty(t, results, "no ops, no answers")
}
