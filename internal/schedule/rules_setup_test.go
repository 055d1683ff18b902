package schedule

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

// rig is a schedule service over a real store in t.TempDir(), on a fake
// clock, whose firing loop signals every pass (TestSignals.Fired).
type rig struct {
	store  *graphstore.Store
	leases *leasing.Service
	nodes  *nodes.Service
	sched  *Service
	clk    *clocktest.Fake
}

// start time: 55 s before a whole minute, so "@every 1m" first fires at
// 03:05:00.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newRig(t *testing.T) *rig {
	t.Helper()
	clk := clocktest.New(t0)
	store, err := graphstore.Open(graphstore.Options{Dir: t.TempDir(), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	limits := func(context.Context, string) (leasing.Limits, error) {
		return leasing.Limits{TTLDefault: time.Hour, TTLMax: time.Hour}, nil
	}
	leases := leasing.New(leasing.Config{Store: store, Clock: clk, Limits: limits})
	w := nodes.New(nodes.Config{Store: store, Leases: leases, Limits: limits,
		Defaults: func(context.Context, string) (nodes.Defaults, error) { return nodes.Defaults{MaxAttempts: 1}, nil }})
	r := &rig{store: store, leases: leases, nodes: w, clk: clk}
	r.startLoop(t)
	return r
}

// startLoop starts a new schedule service (and firing loop) on the rig's
// store, as a server restart would.
func (r *rig) startLoop(t *testing.T) {
	t.Helper()
	r.sched = New(Config{Store: r.store, Nodes: r.nodes, Clock: r.clk})
	r.sched.TestSignals.Fired.Init(t)
	require.NoError(t, r.sched.Start(context.Background()))
	t.Cleanup(r.sched.Stop)
}

// passed waits for the loop's pass that fires schedule id.
func (r *rig) passed(t *testing.T, id string) {
	t.Helper()
	r.sched.TestSignals.Fired.WaitFor(t, func(refs []Ref) bool {
		return slices.ContainsFunc(refs, func(ref Ref) bool { return ref.ID == id })
	})
}

// advanceTo moves the clock to at (at must not be in the past).
func (r *rig) advanceTo(at time.Time) { r.clk.Advance(at.Sub(r.clk.Now())) }

// fireAt moves the clock to at and waits for the loop's pass on id.
func (r *rig) fireAt(t *testing.T, id string, at time.Time) {
	t.Helper()
	r.advanceTo(at)
	r.passed(t, id)
}

type settingsOpt func(*Settings)

func withOverlap(o Overlap) settingsOpt { return func(s *Settings) { s.Overlap = &o } }
func withCatchup(c Catchup) settingsOpt { return func(s *Settings) { s.Catchup = &c } }
func withWindow(d time.Duration) settingsOpt {
	return func(s *Settings) { ms := d.Milliseconds(); s.CatchupWindowMS = &ms }
}
func withBackoff(steps ...int64) settingsOpt { return func(s *Settings) { s.BackoffMS = steps } }

// create makes schedule id firing every minute, a job node in queue q per
// run.
func (r *rig) create(t *testing.T, id string, opts ...settingsOpt) View {
	t.Helper()
	cron, q := "@every 1m", "q"
	st := Settings{ID: &id, Cron: &cron, Template: &nodes.NodeSpec{Type: "job", Queue: &q}}
	for _, o := range opts {
		o(&st)
	}
	v, err := r.sched.Create(context.Background(), "acme", "head", st)
	require.NoError(t, err)
	return v
}

// runs are schedule id's runs, oldest first.
func (r *rig) runs(t *testing.T, id string) []RunView {
	t.Helper()
	out, _, err := r.sched.Runs("acme", id, "", MaxLimit)
	require.NoError(t, err)
	slices.Reverse(out)
	return out
}

func (r *rig) node(t *testing.T, id string) *records.Node {
	t.Helper()
	var n *records.Node
	require.NoError(t, r.store.View(func(tx *graphstore.Tx) (err error) {
		n, err = tx.NodeGet("acme", id)
		return err
	}))
	return n
}

// finish claims node id as alice and completes it (ok) or fails it for good.
func (r *rig) finish(t *testing.T, id string, ok bool) {
	t.Helper()
	ctx := context.Background()
	_, err := r.leases.Claim(ctx, leasing.ClaimParams{Tenant: "acme", NodeID: id, By: "alice"})
	require.NoError(t, err)
	h := leasing.HolderParams{Tenant: "acme", NodeID: id, By: "alice"}
	if ok {
		_, err = r.nodes.Complete(ctx, nodes.CompleteParams{HolderParams: h})
	} else {
		no := false
		_, err = r.nodes.Fail(ctx, nodes.FailParams{HolderParams: h, Error: "broken", Requeue: &no})
	}
	require.NoError(t, err)
}

func minute(i int) time.Time { return time.Date(2026, 1, 2, 3, 5+i, 0, 0, time.UTC) }

func leaseClaim(id string) leasing.ClaimParams {
	return leasing.ClaimParams{Tenant: "acme", NodeID: id, By: "alice"}
}
