package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// TestClaimableRule: each reason the claimable rule refuses a node gives the
// refusal the API has always answered with, and the ready index agrees with
// the rule on the reasons it keeps (blockers, run_at, target).
func TestClaimableRule(t *testing.T) {
	b := setup(t)
	now := b.clk.Now()
	later := now.Add(time.Minute)
	node := func(id, queue string, st records.Status) *records.Node {
		return &records.Node{
			Tenant: "acme", ID: id, Type: "task", Status: st, Queue: queue,
			Labels: []string{}, Props: map[string]any{}, MaxAttempts: 3,
			Usage: map[string]float64{}, UsageTotal: map[string]float64{}, OnChildFail: "fail",
		}
	}
	delayed := node("delayed", "qc", queued)
	delayed.RunAt = &later
	reserved := node("reserved", "qf", queued)
	reserved.Target = "carol"
	busy := node("busy", "qe", running)
	busy.Attempts, busy.LastFence = 1, 1
	busy.Lease = &records.Lease{By: "alice", Fence: 1, TTLMS: 60_000, ClaimedAt: now, RenewedAt: now, ExpiresAt: later}
	require.NoError(t, b.store.Update(context.Background(), func(tx *graphstore.Tx) error {
		for _, n := range []*records.Node{
			node("free", "qa", queued), node("dep", "", open), node("blocked", "qb", queued), delayed,
			node("paused", "qd", queued), busy, node("full", "qe", queued), reserved, node("finished", "qg", done),
		} {
			if err := tx.NodeInsert(n, "head"); err != nil {
				return err
			}
		}
		if err := tx.EdgeInsert("acme", &records.Edge{From: "blocked", Type: graphstore.EdgeDependsOn, To: "dep", CreatedBy: "head", Props: map[string]any{"on_fail": "cancel"}}); err != nil {
			return err
		}
		if err := tx.QueueSettingsPut("acme", "qd", records.QueueSettings{Paused: true}); err != nil {
			return err
		}
		return tx.QueueSettingsPut("acme", "qe", records.QueueSettings{MaxRunning: 1})
	}))

	claimable := func(id, by string) error {
		var err error
		require.NoError(t, b.store.View(func(tx *graphstore.Tx) error {
			n, gerr := tx.NodeGet("acme", id)
			require.NoError(t, gerr)
			err = lifecycle.Claimable(tx, n, by)
			return nil
		}))
		return err
	}
	offered := func(queue, by string) []string {
		var ids []string
		require.NoError(t, b.store.View(func(tx *graphstore.Tx) error {
			tx.ReadyIDs("acme", queue, indexes.ReadyFilter{Sub: by}, func(id string) bool {
				ids = append(ids, id)
				return true
			})
			return nil
		}))
		return ids
	}

	require.NoError(t, claimable("free", "bob"))
	require.Equal(t, []string{"free"}, offered("qa", "bob"))

	var nc *fault.NotClaimable
	require.ErrorAs(t, claimable("blocked", "bob"), &nc)
	require.Equal(t, fault.ReasonBlocked, nc.Reason)
	require.Equal(t, []string{"dep"}, nc.BlockedBy)
	require.Empty(t, offered("qb", "bob"))

	require.ErrorAs(t, claimable("delayed", "bob"), &nc)
	require.Equal(t, fault.ReasonDelayed, nc.Reason)
	require.Equal(t, later, *nc.RunAt)
	require.Empty(t, offered("qc", "bob"))

	require.ErrorAs(t, claimable("paused", "bob"), &nc)
	require.Equal(t, fault.ReasonBlocked, nc.Reason)
	require.Equal(t, "queue qd is paused", nc.Detail)

	var limited *fault.RateLimited
	require.ErrorAs(t, claimable("full", "bob"), &limited)
	require.Equal(t, "queue qe is at its max_running of 1", limited.Reason)

	var conflict *fault.Conflict
	require.ErrorAs(t, claimable("reserved", "bob"), &conflict)
	require.Equal(t, "carol", conflict.Holder)
	require.Empty(t, offered("qf", "bob"))
	require.NoError(t, claimable("reserved", "carol"))
	require.Equal(t, []string{"reserved"}, offered("qf", "carol"))

	require.ErrorAs(t, claimable("finished", "bob"), &nc)
	require.Equal(t, fault.ReasonTerminal, nc.Reason)

	// Once run_at has come, and once the dependency is done, the rule and
	// the index let the node through together.
	b.clk.Advance(2 * time.Minute)
	require.NoError(t, claimable("delayed", "bob"))
	require.Equal(t, []string{"delayed"}, offered("qc", "bob"))
	require.NoError(t, b.store.Update(context.Background(), func(tx *graphstore.Tx) error {
		dep, err := tx.NodeGet("acme", "dep")
		if err != nil {
			return err
		}
		if _, err := lifecycle.Claim(tx, dep, lifecycle.ClaimParams{By: "alice", TTL: time.Minute}); err != nil {
			return err
		}
		return lifecycle.Complete(tx, b.leases, dep, lifecycle.CompleteParams{By: "alice"})
	}))
	require.NoError(t, claimable("blocked", "bob"))
	require.Equal(t, []string{"blocked"}, offered("qb", "bob"))
}
