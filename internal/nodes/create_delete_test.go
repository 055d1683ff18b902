package nodes_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

// A create retried under the same Idempotency-Key answers with the nodes of
// the first and makes none; the same key with another request is refused;
// past the window the key is free again.
func TestCreateIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	idem := &nodes.Idempotency{Key: "k-1", Hash: "h-1"}
	s := nodes.NodeSpec{Type: "task"} // no id: the server picks one

	first, err := b.nodes.Create(ctx, b.head, s, idem)
	require.NoError(t, err)
	again, err := b.nodes.Create(ctx, b.head, s, idem)
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, []records.EventType{records.EventCreated}, b.eventTypes(t, first.ID))
	all, err := b.nodes.Events("acme", 0, 100)
	require.NoError(t, err)
	require.Len(t, all, 1)

	_, err = b.nodes.Create(ctx, b.head, s, &nodes.Idempotency{Key: "k-1", Hash: "other"})
	var mismatch *fault.IdempotencyMismatch
	require.ErrorAs(t, err, &mismatch)

	b.clk.Advance(nodes.IdempotencyWindow + time.Second)
	later, err := b.nodes.Create(ctx, b.head, s, idem)
	require.NoError(t, err)
	require.NotEqual(t, first.ID, later.ID)
}

// A bad spec in a batch is refused with the item named, and nothing of the
// batch is made.
func TestCreateBatchAllOrNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.nodes.CreateBatch(context.Background(), b.head,
		[]nodes.NodeSpec{spec("ok", "q"), spec("bad", "q", maxAttempts(-1))}, "items", nil)
	var inv *fault.Invalid
	require.ErrorAs(t, err, &inv)
	require.Contains(t, err.Error(), "items[1]")

	_, err = b.nodes.CreateBatch(context.Background(), b.head,
		[]nodes.NodeSpec{spec("ok", "q"), spec("child", "q", parent("missing"))}, "items", nil)
	require.Error(t, err)
	all, err := b.nodes.Events("acme", 0, 100)
	require.NoError(t, err)
	require.Empty(t, all)
}

// Deleting a running node needs force: without it the answer names the
// holder and nothing changes; with it the lease ends and the node is gone,
// its history kept.
func TestDeleteRunningNodeNeedsForce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.create(t, spec("n", "q"), spec("idle", "q"))
	b.claim(t, b.alice, "n")
	before := b.get(t, "n")

	err := b.nodes.Delete(ctx, b.head, "n", false)
	var conflict *fault.Conflict
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "alice", conflict.Holder)
	after := b.get(t, "n")
	require.Equal(t, records.StatusRunning, after.Status)
	require.Equal(t, before.Version, after.Version)
	require.EqualValues(t, 1, b.leases.LiveCount("acme", "alice"))

	require.NoError(t, b.nodes.Delete(ctx, b.head, "n", true))
	require.EqualValues(t, 0, b.leases.LiveCount("acme", "alice"))
	_, err = b.nodes.Get("acme", "n")
	var nf *fault.NotFound
	require.ErrorAs(t, err, &nf)
	types := b.eventTypes(t, "n")
	require.Equal(t, records.EventDeleted, types[len(types)-1])
	_, err = b.nodes.Complete(ctx, nodes.CompleteParams{HolderParams: holder(b.alice, "n")})
	require.Error(t, err, "the holder of a deleted node cannot complete it")

	// A node at rest needs no force.
	require.NoError(t, b.nodes.Delete(ctx, b.head, "idle", false))
	require.ErrorAs(t, b.nodes.Delete(ctx, b.head, "idle", false), &nf)
}

// Requeue puts an ended node back at rest with its attempts reset; a node
// that has not ended is refused and keeps its state.
func TestRequeue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.create(t, spec("n", "q", maxAttempts(1)), spec("live", "q"))
	b.claim(t, b.alice, "n")
	_, err := b.nodes.Fail(ctx, nodes.FailParams{HolderParams: holder(b.alice, "n"), Error: "boom"})
	require.NoError(t, err)
	require.Equal(t, records.StatusDead, b.status(t, "n"))

	n, err := b.nodes.Requeue(ctx, b.head, "n", "try again")
	require.NoError(t, err)
	require.Equal(t, records.StatusQueued, n.Status)
	require.Zero(t, n.Attempts)
	require.Nil(t, n.Error)
	require.Equal(t, records.EventRequeued, b.eventTypes(t, "n")[len(b.eventTypes(t, "n"))-1])
	require.Equal(t, records.StatusRunning, b.claim(t, b.bob, "n").Node.Status)

	for _, id := range []string{"n", "live"} { // running, queued
		before := b.get(t, id)
		_, err = b.nodes.Requeue(ctx, b.head, id, "")
		require.Error(t, err, id)
		require.Equal(t, before.Version, b.get(t, id).Version, id)
	}
}

// usage_total is a node's own usage plus its children's usage_total: each
// run's usage is added along the parent chain.
func TestUsageRollsUpTheParentChain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.create(t, spec("top", "q"), spec("mid", "q", parent("top")), spec("leaf", "q", parent("mid")), spec("leaf2", "q", parent("mid")))
	complete := func(id string, usage map[string]float64) {
		b.claim(t, b.alice, id)
		_, err := b.nodes.Complete(ctx, nodes.CompleteParams{HolderParams: holder(b.alice, id), Usage: usage})
		require.NoError(t, err)
	}
	complete("leaf", map[string]float64{"tokens": 10, "usd": 0.5})
	complete("leaf2", map[string]float64{"tokens": 1})
	complete("mid", map[string]float64{"tokens": 100})

	require.Equal(t, map[string]float64{"tokens": 10, "usd": 0.5}, b.get(t, "leaf").UsageTotal)
	mid := b.get(t, "mid")
	require.Equal(t, map[string]float64{"tokens": 100}, mid.Usage)
	require.Equal(t, map[string]float64{"tokens": 111, "usd": 0.5}, mid.UsageTotal)
	top := b.get(t, "top")
	require.Empty(t, top.Usage)
	require.Equal(t, map[string]float64{"tokens": 111, "usd": 0.5}, top.UsageTotal)

	// A bad usage is refused and adds nothing.
	b.claim(t, b.alice, "top")
	_, err := b.nodes.Complete(ctx, nodes.CompleteParams{HolderParams: holder(b.alice, "top"), Usage: map[string]float64{"tokens": math.Inf(1)}})
	require.Error(t, err)
	require.Equal(t, map[string]float64{"tokens": 111, "usd": 0.5}, b.get(t, "top").UsageTotal)
}
