package nodes_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

// A node past its start_by is never handed out, by claim-next or by id,
// even while no reaper has ended it; the reaper then ends it expired, with
// its event, and its parent fails as for any child that ended without
// success.
func TestLapsedNodeIsNeverClaimedAndEndsExpired(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.nodes.Create(ctx, b.head, spec("parent", ""), nil)
	require.NoError(t, err)
	child := spec("late", "q", func(s *nodes.NodeSpec) {
		s.QueueTTLMS = i64(1000)
		parent := "parent"
		s.Parent = &parent
	})
	n, err := b.nodes.Create(ctx, b.head, child, nil)
	require.NoError(t, err)
	require.NotNil(t, n.StartBy)
	require.True(t, n.StartBy.Equal(b.clk.Now().Add(time.Second)))
	_, err = b.nodes.Create(ctx, b.head, spec("other", "q"), nil)
	require.NoError(t, err)

	b.clk.Advance(time.Second)
	got, err := b.nodes.ClaimNext(ctx, nodes.ClaimNextParams{Caller: b.alice, Queue: "q", Max: 5})
	require.NoError(t, err)
	require.Len(t, got, 1, "claim-next passes the lapsed node over")
	require.Equal(t, "other", got[0].Node.ID)
	_, err = b.leases.Claim(ctx, leasing.ClaimParams{Tenant: "acme", NodeID: "late", By: "bob"})
	var nc *fault.NotClaimable
	require.ErrorAs(t, err, &nc)
	require.Equal(t, string(records.StatusExpired), nc.Status)

	r := nodes.NewLapseReaper(nodes.LapseConfig{Store: b.store, Runs: b.leases, Clock: b.clk})
	require.NoError(t, r.Start(ctx), "Start ends what has lapsed before it returns")
	t.Cleanup(r.Stop)
	late := b.get(t, "late")
	require.Equal(t, records.StatusExpired, late.Status)
	require.Equal(t, int64(0), late.Attempts, "no worker ever saw it")
	require.Equal(t, records.StatusFailed, b.get(t, "parent").Status, "on_child_fail: fail")
	evs, err := b.nodes.NodeEvents("acme", "late", 0, 100)
	require.NoError(t, err)
	require.Equal(t, records.EventNodeExpired, evs[len(evs)-1].Type)
	require.Equal(t, int64(1), r.Lapsed())

	// A requeue brings it back without its start_by.
	_, err = b.nodes.Requeue(ctx, b.head, "late", "")
	require.NoError(t, err)
	back := b.get(t, "late")
	require.Equal(t, records.StatusQueued, back.Status)
	require.Nil(t, back.StartBy)
}

// The reaper sleeps until the earliest start_by and wakes when an earlier
// one is filed; a claimed node is not ended.
func TestLapseReaperFollowsTheEarliestStartBy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := nodes.NewLapseReaper(nodes.LapseConfig{Store: b.store, Runs: b.leases, Clock: b.clk, Interval: time.Hour})
	r.TestSignals.Lapsed.Init(t)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(r.Stop)
	at := b.clk.Now().Add(time.Minute)
	_, err := b.nodes.Create(ctx, b.head, spec("slow", "q", func(s *nodes.NodeSpec) { s.StartBy = &at }), nil)
	require.NoError(t, err)
	_, err = b.nodes.Create(ctx, b.head, spec("taken", "q", func(s *nodes.NodeSpec) { s.QueueTTLMS = i64(5000) }), nil)
	require.NoError(t, err)
	_, err = b.nodes.Create(ctx, b.head, spec("fast", "other", func(s *nodes.NodeSpec) { s.QueueTTLMS = i64(10000) }), nil)
	require.NoError(t, err)
	got, err := b.leases.Claim(ctx, leasing.ClaimParams{Tenant: "acme", NodeID: "taken", By: "alice"})
	require.NoError(t, err)
	require.Nil(t, got.Node.StartBy, "a claim clears start_by")

	b.clk.Advance(10 * time.Second)
	for r.Lapsed() < 1 {
		r.TestSignals.Lapsed.Wait(t)
	}
	require.Equal(t, records.StatusExpired, b.get(t, "fast").Status)
	require.Equal(t, records.StatusRunning, b.get(t, "taken").Status)
	require.Equal(t, records.StatusQueued, b.get(t, "slow").Status)
	b.clk.Advance(time.Minute)
	for r.Lapsed() < 2 {
		r.TestSignals.Lapsed.Wait(t)
	}
	require.Equal(t, records.StatusExpired, b.get(t, "slow").Status)
}

func i64(v int64) *int64 { return &v }
