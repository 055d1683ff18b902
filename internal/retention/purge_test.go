package retention_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/retention"
)

// rig is a cleaner over a real store in t.TempDir() on a fake clock, with
// the work service to make nodes, and a record of each removal's
// transaction.
type rig struct {
	store   *graphstore.Store
	leases  *leasing.Service
	nodes   *nodes.Service
	clk     *clocktest.Fake
	cleaner *retention.Cleaner

	mu    sync.Mutex
	perTx map[*graphstore.Tx]int // nodes removed by each transaction
}

// keep is each tenant's retention: acme an hour, initech two, globex
// forever.
var keep = map[string]time.Duration{"acme": time.Hour, "initech": 2 * time.Hour, "globex": 0}

const batch = 3

func newRig(t *testing.T) *rig {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	store, err := graphstore.Open(graphstore.Options{Dir: t.TempDir(), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	r := &rig{store: store, clk: clk, perTx: map[*graphstore.Tx]int{}}
	store.OnNodeGone(func(tx *graphstore.Tx, tenant, id string) error {
		r.mu.Lock()
		r.perTx[tx]++
		r.mu.Unlock()
		return nil
	})
	limits := func(context.Context, string) (leasing.Limits, error) {
		return leasing.Limits{TTLDefault: time.Hour, TTLMax: time.Hour}, nil
	}
	r.leases = leasing.New(leasing.Config{Store: store, Clock: clk, Limits: limits})
	r.nodes = nodes.New(nodes.Config{Store: store, Leases: r.leases, Limits: limits,
		Defaults: func(context.Context, string) (nodes.Defaults, error) { return nodes.Defaults{MaxAttempts: 1}, nil }})
	r.cleaner = retention.New(retention.Config{
		Store: store, Clock: clk, Batch: batch, Interval: time.Minute,
		Retention: func(_ context.Context, tenant string) (time.Duration, error) { return keep[tenant], nil },
	})
	return r
}

func (r *rig) create(t *testing.T, tenant, id string, dependsOn ...string) {
	t.Helper()
	q := "q"
	_, err := r.nodes.Create(context.Background(), nodes.Caller{Tenant: tenant, Sub: "head", Dispatcher: true},
		nodes.NodeSpec{ID: &id, Type: "task", Queue: &q, DependsOn: dependsOn}, nil)
	require.NoError(t, err)
}

// done creates node id and runs it to done; it answers the run's fence.
func (r *rig) done(t *testing.T, tenant, id string) uint64 {
	t.Helper()
	r.create(t, tenant, id)
	ctx := context.Background()
	res, err := r.leases.Claim(ctx, leasing.ClaimParams{Tenant: tenant, NodeID: id, By: "alice"})
	require.NoError(t, err)
	_, err = r.nodes.Complete(ctx, nodes.CompleteParams{HolderParams: leasing.HolderParams{Tenant: tenant, NodeID: id, By: "alice"}})
	require.NoError(t, err)
	return res.Lease.Fence
}

func (r *rig) exists(t *testing.T, tenant, id string) bool {
	t.Helper()
	_, err := r.nodes.Get(tenant, id)
	if _, gone := err.(*fault.NotFound); gone {
		return false
	}
	require.NoError(t, err)
	return true
}

func (r *rig) events(t *testing.T, tenant string) []records.Event {
	t.Helper()
	evs, err := r.nodes.Events(tenant, r.store.EventHorizon(tenant), 10000)
	require.NoError(t, err)
	return evs
}

// A pass removes the finished nodes and the events past each tenant's
// retention, at most Batch nodes per transaction; it keeps live nodes,
// finished nodes a live one still depends on, and everything of a tenant
// that keeps forever.
func TestPassRemovesWhatIsPastRetention(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	var finished []string
	for i := range 8 {
		id := fmt.Sprintf("old-%d", i)
		r.done(t, "acme", id)
		finished = append(finished, id)
	}
	r.done(t, "acme", "needed") // a live node depends on it
	r.create(t, "acme", "live")
	r.create(t, "acme", "waiting", "needed")
	r.done(t, "globex", "forever")
	r.done(t, "initech", "two-hours")

	// Not yet: nothing is an hour old.
	r.clk.Advance(time.Hour - time.Second)
	require.NoError(t, r.cleaner.Pass(ctx))
	require.Zero(t, r.cleaner.Stats().Nodes.Load())
	require.True(t, r.exists(t, "acme", "old-0"))

	r.clk.Advance(time.Second)
	lastOld := r.events(t, "acme")
	require.NotEmpty(t, lastOld)
	r.clk.Advance(time.Second)
	r.done(t, "acme", "fresh") // finished a second later: kept
	require.NoError(t, r.cleaner.Pass(ctx))

	for _, id := range finished {
		require.False(t, r.exists(t, "acme", id), id)
	}
	for _, id := range []string{"live", "waiting", "needed", "fresh"} {
		require.True(t, r.exists(t, "acme", id), id)
	}
	require.True(t, r.exists(t, "globex", "forever"))
	require.True(t, r.exists(t, "initech", "two-hours"))
	require.EqualValues(t, len(finished), r.cleaner.Stats().Nodes.Load())

	// Small batches: no transaction removed more than Batch nodes.
	r.mu.Lock()
	total := 0
	for _, n := range r.perTx {
		require.LessOrEqual(t, n, batch)
		total += n
	}
	txs := len(r.perTx)
	r.mu.Unlock()
	require.Equal(t, len(finished), total)
	require.GreaterOrEqual(t, txs, (len(finished)+batch-1)/batch)

	// Events: those older than an hour went, oldest first, and the horizon
	// stands at the last one removed; fresh's are kept.
	require.Equal(t, lastOld[len(lastOld)-1].Seq, r.store.EventHorizon("acme"))
	for _, e := range r.events(t, "acme") {
		require.Equal(t, "fresh", e.NodeID)
	}
	require.Zero(t, r.store.EventHorizon("globex"))
	require.NotEmpty(t, r.events(t, "globex"))

	// initech keeps two hours.
	r.clk.Advance(time.Hour)
	require.NoError(t, r.cleaner.Pass(ctx))
	require.False(t, r.exists(t, "initech", "two-hours"))
	require.True(t, r.exists(t, "globex", "forever"))
}

// A node created again under a removed node's id never repeats a fence.
func TestRemovedFencesAreNeverReused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	first := r.done(t, "acme", "n")
	r.clk.Advance(2 * time.Hour)
	require.NoError(t, r.cleaner.Pass(ctx))
	require.False(t, r.exists(t, "acme", "n"))
	second := r.done(t, "acme", "n")
	require.Greater(t, second, first)
}
