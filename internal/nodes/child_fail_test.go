package nodes_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

func (b *bundle) failFinal(t *testing.T, c nodes.Caller, id string) {
	t.Helper()
	no := false
	_, err := b.nodes.Fail(context.Background(), nodes.FailParams{HolderParams: holder(c, id), Error: "boom", Requeue: &no})
	require.NoError(t, err)
}

// With on_child_fail: fail, a child that ends failed fails its parent in
// the same transaction, the parent's other unfinished children are
// cancelled (their leases ended), and the failure climbs the tree.
func TestOnChildFailFailsParentUpTheTree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t,
		spec("top", "q", onChildFail(nodes.OnChildFailFail)),
		spec("mid", "q", parent("top"), onChildFail(nodes.OnChildFailFail)),
		spec("bad", "q", parent("mid")),
		spec("sibling", "q", parent("mid")),
		spec("done", "q", parent("mid")),
		spec("uncle", "q", parent("top")),
	)
	b.claim(t, b.alice, "done")
	_, err := b.nodes.Complete(context.Background(), nodes.CompleteParams{HolderParams: holder(b.alice, "done")})
	require.NoError(t, err)
	b.claim(t, b.bob, "sibling")
	b.claim(t, b.alice, "bad")

	b.failFinal(t, b.alice, "bad")

	require.Equal(t, records.StatusFailed, b.status(t, "bad"))
	require.Equal(t, records.StatusFailed, b.status(t, "mid"))
	require.Equal(t, records.StatusFailed, b.status(t, "top"))
	require.Equal(t, records.StatusCancelled, b.status(t, "sibling"))
	require.Equal(t, records.StatusCancelled, b.status(t, "uncle"))
	require.Equal(t, records.StatusDone, b.status(t, "done"))
	require.Nil(t, b.get(t, "sibling").Lease)
	require.EqualValues(t, 0, b.leases.LiveCount("acme", "bob"))
	require.Contains(t, b.eventTypes(t, "mid"), records.EventFailed)
}

// A child that runs out of attempts (dead) fails its parent too.
func TestOnChildFailDeadChildFailsParent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, spec("p", "q"), spec("c", "q", parent("p"), maxAttempts(1)))
	b.claim(t, b.alice, "c")
	_, err := b.nodes.Fail(context.Background(), nodes.FailParams{HolderParams: holder(b.alice, "c"), Error: "boom"})
	require.NoError(t, err)
	require.Equal(t, records.StatusDead, b.status(t, "c"))
	require.Equal(t, records.StatusFailed, b.status(t, "p"), "on_child_fail defaults to fail")
}

// With on_child_fail: ignore, the parent and its other children carry on,
// and the parent becomes claimable once every child has ended.
func TestOnChildFailIgnoreKeepsParent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t,
		spec("p", "q", onChildFail(nodes.OnChildFailIgnore)),
		spec("bad", "q", parent("p")),
		spec("good", "q", parent("p")),
	)
	b.claim(t, b.alice, "bad")
	b.failFinal(t, b.alice, "bad")

	require.Equal(t, records.StatusFailed, b.status(t, "bad"))
	require.Equal(t, records.StatusQueued, b.status(t, "p"))
	require.Equal(t, records.StatusQueued, b.status(t, "good"))
	require.NotContains(t, b.eventTypes(t, "p"), records.EventFailed)

	// p still waits for good.
	require.Equal(t, "good", b.claimNext(t, nodes.ClaimNextParams{Caller: b.bob, Queue: "q"}))
	require.Empty(t, b.claimNext(t, nodes.ClaimNextParams{Caller: b.bob, Queue: "q"}))
	_, err := b.nodes.Complete(context.Background(), nodes.CompleteParams{HolderParams: holder(b.bob, "good")})
	require.NoError(t, err)
	require.Equal(t, "p", b.claimNext(t, nodes.ClaimNextParams{Caller: b.bob, Queue: "q"}))
}
