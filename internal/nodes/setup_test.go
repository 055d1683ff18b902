package nodes_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

// bundle is a work service over a real store in t.TempDir(), on a fake clock.
type bundle struct {
	store  *graphstore.Store
	leases *leasing.Service
	nodes  *nodes.Service
	clk    *clocktest.Fake
	head   nodes.Caller // a dispatcher
	alice  nodes.Caller
	bob    nodes.Caller
}

func setup(t *testing.T) *bundle {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	store, err := graphstore.Open(graphstore.Options{Dir: t.TempDir(), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	limits := func(context.Context, string) (leasing.Limits, error) {
		return leasing.Limits{TTLDefault: 30 * time.Second, TTLMax: time.Hour}, nil
	}
	leases := leasing.New(leasing.Config{Store: store, Clock: clk, Limits: limits})
	require.NoError(t, leases.Start(context.Background()))
	t.Cleanup(leases.Stop)
	w := nodes.New(nodes.Config{Store: store, Leases: leases, Limits: limits,
		Defaults: func(context.Context, string) (nodes.Defaults, error) { return nodes.Defaults{MaxAttempts: 3}, nil }})
	return &bundle{
		store: store, leases: leases, nodes: w, clk: clk,
		head:  nodes.Caller{Tenant: "acme", Sub: "head", Dispatcher: true},
		alice: nodes.Caller{Tenant: "acme", Sub: "alice"},
		bob:   nodes.Caller{Tenant: "acme", Sub: "bob"},
	}
}

// spec is a factory: a task node id in queue q (none when q is ""), shaped
// by the options.
func spec(id, q string, opts ...func(*nodes.NodeSpec)) nodes.NodeSpec {
	s := nodes.NodeSpec{ID: &id, Type: "task"}
	if q != "" {
		s.Queue = &q
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func parent(p string) func(*nodes.NodeSpec) { return func(s *nodes.NodeSpec) { s.Parent = &p } }
func dependsOn(ids ...string) func(*nodes.NodeSpec) {
	return func(s *nodes.NodeSpec) { s.DependsOn = ids }
}
func onChildFail(v string) func(*nodes.NodeSpec) {
	return func(s *nodes.NodeSpec) { s.OnChildFail = &v }
}
func maxAttempts(n int64) func(*nodes.NodeSpec) {
	return func(s *nodes.NodeSpec) { s.MaxAttempts = &n }
}

func (b *bundle) create(t *testing.T, specs ...nodes.NodeSpec) {
	t.Helper()
	_, err := b.nodes.CreateBatch(context.Background(), b.head, specs, "items", nil)
	require.NoError(t, err)
}

func (b *bundle) get(t *testing.T, id string) *records.Node {
	t.Helper()
	var n *records.Node
	require.NoError(t, b.store.View(func(tx *graphstore.Tx) (err error) {
		n, err = tx.NodeGet("acme", id)
		return err
	}))
	return n
}

func (b *bundle) status(t *testing.T, id string) records.Status {
	t.Helper()
	return b.get(t, id).Status
}

// claim takes node id for c directly (not through claim-next).
func (b *bundle) claim(t *testing.T, c nodes.Caller, id string) *leasing.ClaimResult {
	t.Helper()
	res, err := b.leases.Claim(context.Background(), leasing.ClaimParams{Tenant: c.Tenant, NodeID: id, By: c.Sub})
	require.NoError(t, err)
	return res
}

func holder(c nodes.Caller, id string) leasing.HolderParams {
	return leasing.HolderParams{Tenant: c.Tenant, NodeID: id, By: c.Sub}
}

// claimNext asks queue q for one node for c, and answers its id ("" for none).
func (b *bundle) claimNext(t *testing.T, p nodes.ClaimNextParams) string {
	t.Helper()
	if p.Max == 0 {
		p.Max = 1
	}
	got, err := b.nodes.ClaimNext(context.Background(), p)
	require.NoError(t, err)
	if len(got) == 0 {
		return ""
	}
	require.Len(t, got, 1)
	return got[0].Node.ID
}

// events are the types of node id's events after seq, in order.
func (b *bundle) eventTypes(t *testing.T, id string) []records.EventType {
	t.Helper()
	evs, err := b.nodes.NodeEvents("acme", id, 0, 1000)
	require.NoError(t, err)
	out := make([]records.EventType, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}
