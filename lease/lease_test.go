package lease_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/lease"
)

// bundle is one test's store, its fake clock and its directory.
type bundle struct {
	store *lease.Store
	clk   *clocktest.Fake
	dir   string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{clk: clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), dir: t.TempDir()}
	b.open(t)
	return b
}

// open opens the store on b's directory and clock, closed when the test
// ends.
func (b *bundle) open(t *testing.T) {
	t.Helper()
	s, err := lease.Open(b.dir, lease.Options{Clock: b.clk, ReaperInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	b.store = s
}

// task creates node id in queue q of tenant acme.
func (b *bundle) task(t *testing.T, id, q string) {
	t.Helper()
	_, err := b.store.Create(context.Background(), "acme", graph.NodeSpec{ID: id, Type: "task", Queue: q})
	require.NoError(t, err)
}

func (b *bundle) claim(t *testing.T, id, worker string, ttl time.Duration) *lease.Lease {
	t.Helper()
	l, err := b.store.Claim(context.Background(), lease.ClaimParams{Tenant: "acme", NodeID: id, Worker: worker, TTL: ttl})
	require.NoError(t, err)
	return l
}

func (b *bundle) node(t *testing.T, id string) *graph.Node {
	t.Helper()
	n, err := b.store.Graph().Node(context.Background(), "acme", id)
	require.NoError(t, err)
	return n
}

func TestStaleFenceIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.task(t, "n1", "q")
	old := b.claim(t, "n1", "alice", time.Minute)
	require.NoError(t, b.store.Release(ctx, old))
	cur := b.claim(t, "n1", "alice", time.Minute) // the same worker: only the fence tells the terms apart
	require.Equal(t, old.Fence+1, cur.Fence)

	_, err := b.store.Renew(ctx, old)
	require.ErrorIs(t, err, lease.ErrLeaseLost)
	var lost *lease.LeaseLostError
	require.ErrorAs(t, err, &lost)
	require.Equal(t, "n1", lost.NodeID)
	require.Equal(t, "alice", lost.Holder)
	_, err = b.store.Extend(ctx, old, time.Minute)
	require.ErrorIs(t, err, lease.ErrLeaseLost)
	require.ErrorIs(t, b.store.Complete(ctx, old, "stale"), lease.ErrLeaseLost)
	require.ErrorIs(t, b.store.Fail(ctx, old, lease.FailParams{Error: "stale"}), lease.ErrLeaseLost)

	require.NoError(t, b.store.Complete(ctx, cur, "fresh"))
	n := b.node(t, "n1")
	require.Equal(t, graph.StatusDone, n.Status)
	require.JSONEq(t, `"fresh"`, string(n.Result))
}

func TestExpiryReturnsTheWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.task(t, "n1", "q")
	l, err := b.store.ClaimNext(ctx, lease.ClaimNextParams{Tenant: "acme", Queue: "q", Worker: "alice", TTL: 2 * time.Second})
	require.NoError(t, err)

	b.clk.Advance(3 * time.Second)
	_, err = b.store.Renew(ctx, l)
	require.ErrorIs(t, err, lease.ErrLeaseLost, "a lease is dead at its expiry, reaped or not")
	require.Eventually(t, func() bool { return b.node(t, "n1").Status == graph.StatusQueued }, 10*time.Second, 5*time.Millisecond)

	next, err := b.store.ClaimNext(ctx, lease.ClaimNextParams{Tenant: "acme", Queue: "q", Worker: "bob"})
	require.NoError(t, err)
	require.Equal(t, "n1", next.NodeID)
	require.EqualValues(t, 2, next.Fence)
	require.EqualValues(t, 2, next.Attempt, "an expiry keeps the attempt it counted")

	carriers, err := b.store.Graph().Carriers(ctx, "acme", "n1")
	require.NoError(t, err)
	require.Len(t, carriers, 2)
	require.Equal(t, graph.Assignment{NodeID: "n1", Worker: "bob", Fence: 2, ClaimedAt: carriers[0].ClaimedAt}, carriers[0])
	require.True(t, carriers[0].Live())
	require.Equal(t, "alice", carriers[1].Worker)
	require.Equal(t, graph.OutcomeExpired, carriers[1].Outcome)
	require.NotNil(t, carriers[1].EndedAt)
}

func TestNoneReady(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.store.ClaimNext(context.Background(), lease.ClaimNextParams{Tenant: "acme", Queue: "empty", Worker: "alice"})
	require.ErrorIs(t, err, lease.ErrNoneReady)
}

func TestRacingClaimsOneWins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.task(t, "n1", "q")
	const racers = 8
	var wg sync.WaitGroup
	errs := make([]error, racers)
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			_, errs[i] = b.store.Claim(context.Background(), lease.ClaimParams{Tenant: "acme", NodeID: "n1", Worker: "w" + string(rune('a'+i))})
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		require.ErrorIs(t, err, lease.ErrHeld)
		var held *lease.HeldError
		require.ErrorAs(t, err, &held)
		require.NotEmpty(t, held.Holder)
	}
	require.Equal(t, 1, won)
	require.EqualValues(t, 1, b.node(t, "n1").LastFence)
}

func TestTenantsAreIsolated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.task(t, "secret", "q")
	_, err := b.store.Graph().Node(ctx, "other", "secret")
	require.ErrorIs(t, err, graph.ErrNotFound)
	_, err = b.store.Claim(ctx, lease.ClaimParams{Tenant: "other", NodeID: "secret", Worker: "mallory"})
	require.ErrorIs(t, err, graph.ErrNotFound)
	_, err = b.store.ClaimNext(ctx, lease.ClaimNextParams{Tenant: "other", Queue: "q", Worker: "mallory"})
	require.ErrorIs(t, err, lease.ErrNoneReady)
	ns, _, err := b.store.Graph().Nodes(ctx, "other", graph.NodeQuery{})
	require.NoError(t, err)
	require.Empty(t, ns)
	ns, _, err = b.store.Graph().Nodes(ctx, "acme", graph.NodeQuery{})
	require.NoError(t, err)
	require.Len(t, ns, 1, "identity nodes are not listed")
}

func TestReopenKeepsTheData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.task(t, "n1", "q")
	l := b.claim(t, "n1", "alice", time.Minute)
	require.NoError(t, b.store.Close())
	_, err := b.store.Renew(ctx, l)
	require.ErrorIs(t, err, lease.ErrClosed)

	b.open(t)
	n := b.node(t, "n1")
	require.Equal(t, graph.StatusRunning, n.Status)
	require.Equal(t, "alice", n.Lease.Holder)
	renewed, err := b.store.Renew(ctx, l)
	require.NoError(t, err, "a lease live at close survives the reopen")
	require.NoError(t, b.store.Complete(ctx, renewed, nil))
	require.Equal(t, graph.StatusDone, b.node(t, "n1").Status)
}

func TestCreateKeepsDependencies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.task(t, "first", "q")
	_, err := b.store.Create(ctx, "acme", graph.NodeSpec{ID: "second", Type: "task", Queue: "q", DependsOn: []string{"first"}})
	require.NoError(t, err)
	_, err = b.store.Claim(ctx, lease.ClaimParams{Tenant: "acme", NodeID: "second", Worker: "alice"})
	require.ErrorIs(t, err, lease.ErrNotClaimable)
	var nc *lease.NotClaimableError
	require.ErrorAs(t, err, &nc)
	require.Equal(t, []string{"first"}, nc.BlockedBy)

	l := b.claim(t, "first", "alice", 0)
	require.NoError(t, b.store.Complete(ctx, l, nil))
	next, err := b.store.ClaimNext(ctx, lease.ClaimNextParams{Tenant: "acme", Queue: "q", Worker: "alice"})
	require.NoError(t, err)
	require.Equal(t, "second", next.NodeID)
}

func TestInvalidArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.store.Create(ctx, "Not A Tenant", graph.NodeSpec{Type: "task"})
	require.ErrorIs(t, err, graph.ErrInvalid)
	_, err = b.store.Claim(ctx, lease.ClaimParams{Tenant: "acme", NodeID: "n1", Worker: "identity:x"})
	require.ErrorIs(t, err, graph.ErrInvalid)
	_, err = b.store.Create(ctx, "acme", graph.NodeSpec{})
	require.ErrorIs(t, err, graph.ErrInvalid, "a node needs a type")
	_, err = lease.Open("", lease.Options{})
	require.ErrorIs(t, err, graph.ErrInvalid)
}

// graph names the outcomes the lifecycle stores; they must stay the same
// strings.
func TestOutcomesAreTheLifecycles(t *testing.T) {
	t.Parallel()
	for public, stored := range map[graph.Outcome]string{
		graph.OutcomeDone: lifecycle.OutcomeDone, graph.OutcomeFailed: lifecycle.OutcomeFailed,
		graph.OutcomeReleased: lifecycle.OutcomeReleased, graph.OutcomeExpired: lifecycle.OutcomeExpired,
		graph.OutcomeCancelled: lifecycle.OutcomeCancelled,
	} {
		require.Equal(t, stored, string(public))
	}
}

// graph names the statuses the store keeps, all of them.
func TestStatusesAreTheStores(t *testing.T) {
	t.Parallel()
	var stored []string
	for _, s := range records.Statuses() {
		stored = append(stored, string(s))
	}
	var public []string
	for _, s := range graph.Statuses() {
		public = append(public, string(s))
	}
	require.ElementsMatch(t, stored, public)
}

func TestCancelEndsTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.task(t, "parent", "")
	_, err := b.store.Create(ctx, "acme", graph.NodeSpec{ID: "child", Type: "task", Queue: "q", Parent: "parent"})
	require.NoError(t, err)
	children, err := b.store.Graph().Children(ctx, "acme", "parent")
	require.NoError(t, err)
	require.Equal(t, []string{"child"}, children)
	l, err := b.store.ClaimNext(ctx, lease.ClaimNextParams{Tenant: "acme", Queue: "q", Worker: "alice"})
	require.NoError(t, err)

	ids, err := b.store.Cancel(ctx, "acme", "parent", "not needed")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"parent", "child"}, ids)
	require.ErrorIs(t, b.store.Complete(ctx, l, nil), lease.ErrLeaseLost)
	require.Equal(t, graph.StatusCancelled, b.node(t, "child").Status)
	carried, err := b.store.Graph().CarriedBy(ctx, "acme", "alice")
	require.NoError(t, err)
	require.Len(t, carried, 1)
	require.Equal(t, graph.OutcomeCancelled, carried[0].Outcome)
}

func TestADirectoryIsOpenOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := lease.Open(b.dir, lease.Options{})
	require.Error(t, err, "the store's lock")
	require.NoError(t, b.store.Close())
	again, err := lease.Open(b.dir, lease.Options{})
	require.NoError(t, err)
	require.NoError(t, again.Close())
}
