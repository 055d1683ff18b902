package leasing

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

type bundle struct {
	dir   string
	store *graphstore.Store
	svc   *Service
	clk   *clocktest.Fake
}

var testLimits = Limits{TTLDefault: 30 * time.Second, TTLMax: 2 * time.Minute}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{dir: t.TempDir(), clk: clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	b.open(t)
	return b
}

func (b *bundle) open(t *testing.T) {
	t.Helper()
	store, err := graphstore.Open(graphstore.Options{Dir: b.dir, Clock: b.clk})
	require.NoError(t, err)
	b.store = store
	b.svc = New(Config{
		Store: store, Clock: b.clk, ReaperInterval: time.Second,
		Limits: func(context.Context, string) (Limits, error) { return testLimits, nil },
	})
	b.svc.TestSignals.Reaped.Init(t) // before Start: a reap at start is heard too
	require.NoError(t, b.svc.Start(context.Background()))
	t.Cleanup(b.close)
}

func (b *bundle) close() {
	if b.store == nil {
		return
	}
	b.svc.Stop()
	_ = b.store.Close()
	b.store = nil
}

// restart closes and reopens the store and the lease service on the same dir.
func (b *bundle) restart(t *testing.T) {
	t.Helper()
	b.close()
	b.open(t)
}

func (b *bundle) createNode(t *testing.T, id string, maxAttempts int64) {
	t.Helper()
	err := b.store.Update(context.Background(), func(tx *graphstore.Tx) error {
		return tx.NodeInsert(&records.Node{
			Tenant: "acme", ID: id, Type: "task", Status: records.StatusQueued, Queue: "q",
			Labels: []string{}, Props: map[string]any{}, MaxAttempts: maxAttempts,
			Usage: map[string]float64{}, UsageTotal: map[string]float64{}, OnChildFail: "fail",
		}, "head")
	})
	require.NoError(t, err)
}

func (b *bundle) node(t *testing.T, id string) *records.Node {
	t.Helper()
	var n *records.Node
	require.NoError(t, b.store.View(func(tx *graphstore.Tx) error {
		var err error
		n, err = tx.NodeGet("acme", id)
		return err
	}))
	return n
}

func (b *bundle) claim(who, id string, ttl time.Duration) (*ClaimResult, error) {
	return b.svc.Claim(context.Background(), ClaimParams{Tenant: "acme", NodeID: id, By: who, TTL: ttl})
}

func holder(who, id string) HolderParams { return HolderParams{Tenant: "acme", NodeID: id, By: who} }

func TestClaimRenewsOwnLeaseAndConflictsForOthers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createNode(t, "n1", 5)

	first, err := b.claim("alice", "n1", 0)
	require.NoError(t, err)
	require.False(t, first.Renewed)
	require.EqualValues(t, 1, first.Lease.Fence)
	require.EqualValues(t, 1, first.Node.Attempts)
	require.Equal(t, testLimits.TTLDefault.Milliseconds(), first.Lease.TTLMS)

	b.clk.Advance(10 * time.Second)
	again, err := b.claim("alice", "n1", 0)
	require.NoError(t, err)
	require.True(t, again.Renewed)
	require.Equal(t, first.Lease.Fence, again.Lease.Fence)
	require.EqualValues(t, 1, again.Node.Attempts, "a renewal counts no attempt")

	_, err = b.claim("bob", "n1", 0)
	var conflict *fault.Conflict
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "alice", conflict.Holder)
	require.Equal(t, again.Lease.ExpiresAt, conflict.ExpiresAt)
}

func TestClaimCapsTTLAtTenantMax(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createNode(t, "n1", 5)
	res, err := b.claim("alice", "n1", time.Hour)
	require.NoError(t, err)
	require.True(t, res.Capped)
	require.Equal(t, testLimits.TTLMax.Milliseconds(), res.Lease.TTLMS)
}

func TestExpiredLeaseIsDeadAtTheInstantEvenBeforeTheReaper(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createNode(t, "n1", 5)
	b.svc.Stop() // no reaper: the rule must hold without it
	_, err := b.claim("alice", "n1", 5*time.Second)
	require.NoError(t, err)

	b.clk.Advance(5*time.Second - time.Millisecond)
	_, err = b.svc.Renew(context.Background(), holder("alice", "n1"))
	require.NoError(t, err, "one millisecond before expiry the lease is live")

	b.clk.Advance(5 * time.Second) // past the renewed expiry
	_, err = b.svc.Renew(context.Background(), holder("alice", "n1"))
	var lost *fault.LeaseLost
	require.ErrorAs(t, err, &lost)

	res, err := b.claim("bob", "n1", 0)
	require.NoError(t, err, "another identity may claim at once")
	require.EqualValues(t, 2, res.Lease.Fence)
	require.EqualValues(t, 2, res.Node.Attempts)
}

func TestReaperRequeuesAtExpiryAndDeadLettersAtMaxAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createNode(t, "n1", 2)

	for attempt := 1; attempt <= 2; attempt++ {
		_, err := b.claim("alice", "n1", 5*time.Second)
		require.NoError(t, err)
		b.clk.Advance(5 * time.Second)
		want := records.StatusQueued
		if attempt == 2 {
			want = records.StatusDead
		}
		require.Equal(t, 1, b.svc.TestSignals.Reaped.Wait(t), "attempt %d: the reaper settles the expiry as soon as the clock passes it", attempt)
		require.Equal(t, want, b.node(t, "n1").Status, "attempt %d", attempt)
	}
	n := b.node(t, "n1")
	require.Nil(t, n.Lease)
	require.EqualValues(t, 2, n.Attempts)
	_, err := b.claim("bob", "n1", 0)
	var nc *fault.NotClaimable
	require.ErrorAs(t, err, &nc)
	require.Equal(t, fault.ReasonTerminal, nc.Reason)

	var edges []*records.Edge
	require.NoError(t, b.store.View(func(tx *graphstore.Tx) error {
		return tx.EdgesOf("acme", "n1", graphstore.EdgeQuery{Dir: graphstore.DirOut, Type: graphstore.EdgeAssigned, IncludeRetired: true},
			func(e *records.Edge, _ []byte) (bool, error) { edges = append(edges, e); return true, nil })
	}))
	require.Len(t, edges, 2)
	for _, e := range edges {
		require.Equal(t, OutcomeExpired, e.Props["outcome"])
		require.NotNil(t, e.RetiredAt)
	}
}

func TestTimeoutEndsRunDespiteRenewals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createNode(t, "n1", 5)
	require.NoError(t, b.store.Update(context.Background(), func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet("acme", "n1")
		if err != nil {
			return err
		}
		timeout := int64(8000)
		n.TimeoutMS = &timeout
		return tx.NodePut(n)
	}))
	_, err := b.claim("alice", "n1", 5*time.Second)
	require.NoError(t, err)
	b.clk.Advance(4 * time.Second)
	_, err = b.svc.Renew(context.Background(), holder("alice", "n1"))
	require.NoError(t, err)
	b.clk.Advance(4 * time.Second)
	require.Equal(t, 1, b.svc.TestSignals.Reaped.Wait(t), "the timeout is a deadline the reaper settles")
	n := b.node(t, "n1")
	require.Equal(t, records.StatusQueued, n.Status)
	require.NotNil(t, n.Error)
	require.Equal(t, "timeout", *n.Error)
}

func TestReleaseGivesAttemptBackAndIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createNode(t, "n1", 5)
	_, err := b.claim("alice", "n1", 0)
	require.NoError(t, err)

	_, err = b.svc.Release(context.Background(), ReleaseParams{HolderParams: holder("bob", "n1")})
	var conflict *fault.Conflict
	require.ErrorAs(t, err, &conflict, "releasing another identity's lease is a conflict")

	n, err := b.svc.Release(context.Background(), ReleaseParams{HolderParams: holder("alice", "n1"), Reason: "done for today"})
	require.NoError(t, err)
	require.Equal(t, records.StatusQueued, n.Status)
	require.EqualValues(t, 0, n.Attempts)

	n, err = b.svc.Release(context.Background(), ReleaseParams{HolderParams: holder("alice", "n1")})
	require.NoError(t, err, "a second release succeeds")
	require.Equal(t, records.StatusQueued, n.Status)
}

func TestHandoffReservesNodeForTarget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createNode(t, "n1", 5)
	_, err := b.claim("alice", "n1", 0)
	require.NoError(t, err)
	_, err = b.svc.Release(context.Background(), ReleaseParams{HolderParams: holder("alice", "n1"), To: "carol"})
	require.NoError(t, err)
	require.Equal(t, "carol", b.node(t, "n1").Target)
	_, err = b.claim("bob", "n1", 0)
	var reserved *fault.Conflict
	require.ErrorAs(t, err, &reserved, "the claimable rule keeps a handed-off node for its target")
	require.Equal(t, "carol", reserved.Holder)
	_, err = b.claim("carol", "n1", 0)
	require.NoError(t, err)
}

func TestExtendIsCappedAndNeverShortens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createNode(t, "n1", 5)
	res, err := b.claim("alice", "n1", 10*time.Second)
	require.NoError(t, err)

	ext, err := b.svc.Extend(context.Background(), holder("alice", "n1"), 20*time.Second)
	require.NoError(t, err)
	require.False(t, ext.Capped)
	require.Equal(t, res.Lease.ExpiresAt.Add(20*time.Second), ext.Lease.ExpiresAt)

	ext, err = b.svc.Extend(context.Background(), holder("alice", "n1"), time.Hour)
	require.NoError(t, err)
	require.True(t, ext.Capped)
	require.Equal(t, b.clk.Now().Add(testLimits.TTLMax), ext.Lease.ExpiresAt)

	_, err = b.svc.Extend(context.Background(), holder("alice", "n1"), 0)
	var invalid *fault.Invalid
	require.ErrorAs(t, err, &invalid)
}

func TestStaleFenceIsLeaseLost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createNode(t, "n1", 5)
	_, err := b.claim("alice", "n1", 0)
	require.NoError(t, err)
	_, err = b.svc.Release(context.Background(), ReleaseParams{HolderParams: holder("alice", "n1")})
	require.NoError(t, err)
	res, err := b.claim("alice", "n1", 0)
	require.NoError(t, err)
	require.EqualValues(t, 2, res.Lease.Fence)

	p := holder("alice", "n1")
	p.Fence = 1
	_, err = b.svc.Renew(context.Background(), p)
	var lost *fault.LeaseLost
	require.ErrorAs(t, err, &lost)
	require.Equal(t, "alice", lost.Holder)
	p.Fence = 2
	_, err = b.svc.Renew(context.Background(), p)
	require.NoError(t, err)
}

func TestManyClaimersExactlyOneWinsAndFencesIncrease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createNode(t, "n1", 1000)
	var lastFence uint64
	for round := 0; round < 20; round++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []*ClaimResult
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				res, err := b.claim(string(rune('a'+w%26))+"-worker", "n1", 0)
				if err != nil {
					var conflict *fault.Conflict
					if !errors.As(err, &conflict) {
						t.Errorf("unexpected error: %v", err)
					}
					return
				}
				mu.Lock()
				winners = append(winners, res)
				mu.Unlock()
			}(w)
		}
		wg.Wait()
		// Identities repeat (w%26), so a second claim by the winner's identity
		// is a renewal, not a second lease.
		fresh := 0
		for _, wres := range winners {
			if !wres.Renewed {
				fresh++
				require.Greater(t, wres.Lease.Fence, lastFence, "fences strictly increase")
				lastFence = wres.Lease.Fence
			}
		}
		require.Equal(t, 1, fresh, "round %d: exactly one new lease", round)
		_, err := b.svc.Release(context.Background(), ReleaseParams{HolderParams: holder(winners[0].Lease.By, "n1")})
		require.NoError(t, err)
	}
}

func TestRestartKeepsLiveLeasesAndFencesKeepIncreasing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createNode(t, "live", 5)
	b.createNode(t, "down", 5)
	b.createNode(t, "ended", 5)
	live, err := b.claim("alice", "live", 30*time.Second)
	require.NoError(t, err)
	_, err = b.claim("alice", "down", 15*time.Second)
	require.NoError(t, err)
	_, err = b.claim("alice", "ended", 5*time.Second)
	require.NoError(t, err)
	b.svc.Stop() // no reaper from here on: as if its settlements were lost

	// "ended" lapses at 5 s; a renewal of "live" at 10 s is stored after it,
	// so no write lost afterwards can have renewed "ended"; "down" lapses at
	// 15 s, after the last stored write, while the server is down: a renewal
	// answered and lost may have promised its holder more.
	b.clk.Advance(10 * time.Second)
	_, err = b.svc.Renew(context.Background(), holder("alice", "live"))
	require.NoError(t, err)
	b.clk.Advance(10 * time.Second)
	b.restart(t)

	n := b.node(t, "live")
	require.NotNil(t, n.Lease)
	require.Equal(t, live.Lease.Fence, n.Lease.Fence)
	require.Equal(t, b.clk.Now().Add(30*time.Second), n.Lease.ExpiresAt, "a live lease gets its full TTL afresh")
	n = b.node(t, "down")
	require.NotNil(t, n.Lease, "a lease that lapsed after the last stored write may have been renewed by a lost one")
	require.Equal(t, b.clk.Now().Add(15*time.Second), n.Lease.ExpiresAt, "so it gets its full TTL afresh")
	require.Equal(t, 1, b.svc.TestSignals.Reaped.Wait(t), "a lease that lapsed before the last stored write is reaped at start")
	require.Equal(t, records.StatusQueued, b.node(t, "ended").Status)

	_, err = b.svc.Renew(context.Background(), holder("alice", "live"))
	require.NoError(t, err)
	_, err = b.svc.Release(context.Background(), ReleaseParams{HolderParams: holder("alice", "live")})
	require.NoError(t, err)
	b.restart(t)
	res, err := b.claim("bob", "live", 0)
	require.NoError(t, err)
	require.Greater(t, res.Lease.Fence, live.Lease.Fence, "fences survive restarts")
}

func TestMaxLeasesPerIdentity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.svc.limits = func(context.Context, string) (Limits, error) {
		l := testLimits
		l.MaxLeasesPerIdentity = 2
		return l, nil
	}
	for _, id := range []string{"a", "b", "c"} {
		b.createNode(t, id, 5)
	}
	_, err := b.claim("alice", "a", 0)
	require.NoError(t, err)
	_, err = b.claim("alice", "b", 0)
	require.NoError(t, err)
	_, err = b.claim("alice", "c", 0)
	var limited *fault.RateLimited
	require.ErrorAs(t, err, &limited)
	_, err = b.claim("bob", "c", 0)
	require.NoError(t, err, "the cap is per identity")
}

// EndRun retires a run's assigned edge the same whether it takes the edge
// from the node's record (RunEdge's usual way) or from the store's live
// edges (a node whose record does not hold it): the same props, with the
// fence of either MessagePack width, and the same history record.
func TestARunsEdgeRetiresTheSameFromTheRecordOrTheStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	retired := map[string][]*records.Edge{}
	for _, id := range []string{"record", "store"} {
		b.createNode(t, id, 500)
		for _, fence := range []uint64{5, 300} { // a fixint, then a uint16
			require.NoError(t, b.store.Update(ctx, func(tx *graphstore.Tx) error {
				n, err := tx.NodeGet("acme", id)
				if err != nil {
					return err
				}
				n.LastFence = fence - 1
				return tx.NodePut(n)
			}))
			_, err := b.svc.Claim(ctx, ClaimParams{Tenant: "acme", NodeID: id, By: "alice", TTL: time.Minute, Session: "s-" + id})
			require.NoError(t, err)
			require.NoError(t, b.store.Update(ctx, func(tx *graphstore.Tx) error {
				n, err := tx.NodeGet("acme", id)
				if err != nil {
					return err
				}
				if id == "store" {
					n.Assigned = nil
				}
				// Release ends the run through EndRun (outcome released).
				return lifecycle.Release(tx, b.svc, n, lifecycle.ReleaseParams{By: "alice"})
			}))
		}
		require.NoError(t, b.store.View(func(tx *graphstore.Tx) error {
			return tx.EdgesOf("acme", id, graphstore.EdgeQuery{Dir: graphstore.DirOut, Type: graphstore.EdgeAssigned, IncludeRetired: true},
				func(e *records.Edge, _ []byte) (bool, error) {
					retired[id] = append(retired[id], e)
					return true, nil
				})
		}))
		require.Len(t, retired[id], 2, "both runs' edges retired, none left live")
	}
	for i, e := range retired["record"] {
		s := retired["store"][i]
		require.NotNil(t, e.RetiredAt)
		require.Equal(t, s.RetiredAt, e.RetiredAt)
		require.Equal(t, "identity:alice", e.To)
		require.Equal(t, s.CreatedAt, e.CreatedAt)
		require.Equal(t, s.CreatedBy, e.CreatedBy)
		require.Equal(t, OutcomeReleased, e.Props["outcome"])
		require.Equal(t, "s-record", e.Props["session"])
		s.Props["session"] = "s-record"
		require.Equal(t, s.Props, e.Props)
	}
}
