package lease

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/core"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/tenancy"
	"github.com/tether-run/tether/tenant"
)

// Clock is the time source that decides expiries, delays and retries: the
// wall clock by default, a fake one in tests (clienttest.NewClock).
type Clock = clock.Clock

// Timer is a pending call a Clock arms.
type Timer = clock.Timer

// DefaultIdentity records who created a node when neither its spec nor
// Options name anyone.
const DefaultIdentity = "in-process"

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Clock decides lease expiry (nil: the wall clock).
	Clock Clock
	// Logger receives the services' logs (nil: none).
	Logger *slog.Logger
	// ReaperInterval is the most an expired lease waits before its node is
	// given back (0: one second, as `tether serve`).
	ReaperInterval time.Duration
	// Identity is recorded as the creator of nodes whose spec names none
	// and of API keys (DefaultIdentity when empty).
	Identity string
}

// Store is Tether open in-process on one directory. It is safe for
// concurrent use; Close it when done.
type Store struct {
	core  *core.Core
	graph *graph.Graph
	ten   *tenant.Tenants
	by    string

	// closeMu orders Close calls; closed is read on every call, without
	// a lock.
	closeMu sync.Mutex
	closed  atomic.Bool
	// stop ends ClaimNext long polls when the Store closes.
	stop chan struct{}
}

// Open opens (or creates) the store in dir, rebuilds its leases (every
// lease live when it was last closed gets its full TTL afresh) and starts
// its background services: the reaper that gives expired work back, and
// the schedule, retention and sweep loops a server runs.
//
// The tenant defaults are those of `tether serve` without configuration:
// claims of 5 minutes (at most 2 hours), 5 attempts, retries after 5 s
// doubling to 10 min, 7 days of retention. Package tenant changes them per
// tenant.
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: Open needs a directory", graph.ErrInvalid)
	}
	by := opts.Identity
	if by == "" {
		by = DefaultIdentity
	}
	if problem := graphstore.SubjectProblem(by); problem != "" {
		return nil, fmt.Errorf("%w: Options.Identity %s", graph.ErrInvalid, problem)
	}
	reaper := opts.ReaperInterval
	if reaper <= 0 {
		reaper = time.Second
	}
	c, err := core.Open(context.Background(), core.Config{
		DataDir: dir, Clock: opts.Clock, Logger: opts.Logger, ReaperInterval: reaper,
		// A zero policy field takes tenancy's documented default, the
		// same as tether serve's without configuration.
		Tenant: tenancy.Config{Defaults: tenancy.Policy{BlobQuotaBytes: tenancy.DefaultBlobQuotaBytes}},
	})
	if err != nil {
		return nil, fmt.Errorf("error opening %s: %w", dir, err)
	}
	return &Store{core: c, graph: graph.New(c.Store), ten: tenant.New(c.Tenants, by), by: by, stop: make(chan struct{})}, nil
}

// Close stops the background services and closes the store. Calls after
// Close fail with ErrClosed; a second Close does nothing.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	close(s.stop)
	return s.core.Close()
}

// Graph answers queries over the store.
func (s *Store) Graph() *graph.Graph { return s.graph }

// Tenants manages the store's tenant policies and API keys.
func (s *Store) Tenants() *tenant.Tenants { return s.ten }

// Lease is one term of a lease: the claim that granted it, identified by
// its fence. Renew and Extend return the same term with its new expiry; a
// *Lease of an earlier term is refused (ErrLeaseLost).
type Lease struct {
	Tenant  string
	NodeID  string
	Worker  string
	Session string
	Fence   uint64
	// Attempt is the node's attempt this run counts (1 for the first).
	Attempt   int64
	TTL       time.Duration
	ClaimedAt time.Time
	ExpiresAt time.Time
	// Capped is set when the TTL asked was above the tenant's max.
	Capped bool
}

// ClaimParams ask for a lease on one node.
type ClaimParams struct {
	Tenant string
	NodeID string
	Worker string // who holds the lease
	// Session tells apart the runs of one worker (optional).
	Session string
	// TTL is the lease's length (0: the tenant's default; capped at its max).
	TTL time.Duration
}

// ClaimNextParams ask for the next ready node of a queue.
type ClaimNextParams struct {
	Tenant  string
	Queue   string
	Worker  string
	Session string
	TTL     time.Duration
	// Wait, when set, waits up to that long for a node to become ready.
	Wait time.Duration
	// Types and Labels, when set, keep only nodes of one of these types and
	// carrying every one of these labels.
	Types  []string
	Labels []string
}

// FailParams say how a run failed.
type FailParams struct {
	// Error is the failure's text, stored on the node.
	Error string
	// NoRetry ends the node as failed even with attempts left.
	NoRetry bool
	// RetryIn delays the retry (0: the node's backoff).
	RetryIn time.Duration
}

// Create makes a node in tenant with its full semantics: its queue, its
// parent and dependencies (depends_on edges), the tenant's defaults and
// its created event. It returns the node as read right after.
func (s *Store) Create(ctx context.Context, tenant string, spec graph.NodeSpec) (*graph.Node, error) {
	if err := s.check(tenant, "", spec.CreatedBy); err != nil {
		return nil, err
	}
	by := spec.CreatedBy
	if by == "" {
		by = s.by
	}
	n, err := s.core.Nodes.Create(ctx, nodes.Caller{Tenant: tenant, Sub: by, Dispatcher: true}, nodeSpec(spec), nil)
	if err != nil {
		return nil, translate(spec.ID, err)
	}
	return s.graph.Node(ctx, tenant, n.ID)
}

// Claim takes node p.NodeID for p.Worker. Claiming a node the worker
// already holds renews that lease (same fence).
func (s *Store) Claim(ctx context.Context, p ClaimParams) (*Lease, error) {
	if err := s.check(p.Tenant, p.Worker, ""); err != nil {
		return nil, err
	}
	r, err := s.core.Leases.Claim(ctx, leasing.ClaimParams{Tenant: p.Tenant, NodeID: p.NodeID, By: p.Worker, Session: p.Session, TTL: p.TTL})
	if err != nil {
		return nil, translate(p.NodeID, err)
	}
	return leaseOf(p.Tenant, r.Node, r.Lease, r.Capped), nil
}

// ClaimNext claims the next ready node of p.Queue for p.Worker: highest
// priority first, then oldest. With no node ready it fails with
// ErrNoneReady, after p.Wait when one is given (sooner if the Store
// closes).
func (s *Store) ClaimNext(ctx context.Context, p ClaimNextParams) (*Lease, error) {
	if err := s.check(p.Tenant, p.Worker, ""); err != nil {
		return nil, err
	}
	rs, err := s.core.Nodes.ClaimNext(ctx, nodes.ClaimNextParams{
		Caller: nodes.Caller{Tenant: p.Tenant, Sub: p.Worker}, Queue: p.Queue, Session: p.Session,
		TTL: p.TTL, Wait: p.Wait, WaitEnd: s.stop, Types: p.Types, Labels: p.Labels, Max: 1,
	})
	if err != nil {
		return nil, translate("", err)
	}
	if len(rs) == 0 {
		return nil, ErrNoneReady
	}
	return leaseOf(p.Tenant, rs[0].Node, rs[0].Lease, rs[0].Capped), nil
}

// Renew pushes l's expiry to now + its TTL and returns the renewed term.
func (s *Store) Renew(ctx context.Context, l *Lease) (*Lease, error) {
	hp, err := s.holder(l)
	if err != nil {
		return nil, err
	}
	r, err := s.core.Leases.Renew(ctx, hp)
	if err != nil {
		return nil, translate(l.NodeID, err)
	}
	return renewed(l, r.Lease, false), nil
}

// Extend moves l's expiry by d (never past now + the tenant's max TTL,
// which sets Capped) and returns the extended term.
func (s *Store) Extend(ctx context.Context, l *Lease, d time.Duration) (*Lease, error) {
	hp, err := s.holder(l)
	if err != nil {
		return nil, err
	}
	r, err := s.core.Leases.Extend(ctx, hp, d)
	if err != nil {
		return nil, translate(l.NodeID, err)
	}
	return renewed(l, r.Lease, r.Capped), nil
}

// Release gives l's node back: it is claimable again at once and the
// attempt l counted is given back.
func (s *Store) Release(ctx context.Context, l *Lease) error {
	hp, err := s.holder(l)
	if err != nil {
		return err
	}
	_, err = s.core.Leases.Release(ctx, leasing.ReleaseParams{HolderParams: hp})
	return translate(l.NodeID, err)
}

// Complete ends l's run with status done and stores result (marshalled to
// JSON unless it is a json.RawMessage; nil: none). Retrying a completion
// that succeeded succeeds and changes nothing.
func (s *Store) Complete(ctx context.Context, l *Lease, result any) error {
	hp, err := s.holder(l)
	if err != nil {
		return err
	}
	var raw json.RawMessage
	switch r := result.(type) {
	case nil:
	case json.RawMessage:
		raw = r
	default:
		if raw, err = json.Marshal(result); err != nil {
			return fmt.Errorf("%w: result: %w", graph.ErrInvalid, err)
		}
	}
	_, err = s.core.Nodes.Complete(ctx, nodes.CompleteParams{HolderParams: hp, Result: raw})
	return translate(l.NodeID, err)
}

// Fail ends l's run unsuccessfully: the node goes back to its queue (after
// its backoff) while it has attempts left, else it is dead; with NoRetry it
// is failed.
func (s *Store) Fail(ctx context.Context, l *Lease, p FailParams) error {
	hp, err := s.holder(l)
	if err != nil {
		return err
	}
	fp := nodes.FailParams{HolderParams: hp, Error: p.Error}
	if p.NoRetry {
		no := false
		fp.Requeue = &no
	}
	if p.RetryIn > 0 {
		fp.RetryIn = &p.RetryIn
	}
	_, err = s.core.Nodes.Fail(ctx, fp)
	return translate(l.NodeID, err)
}

// Cancel cancels node id of tenant and, with it, every unfinished
// descendant and dependent that cancels with it; their live leases end
// (their holders' next act fails with ErrLeaseLost). It returns the ids it
// cancelled.
func (s *Store) Cancel(ctx context.Context, tenant, id, reason string) ([]string, error) {
	if err := s.check(tenant, "", ""); err != nil {
		return nil, err
	}
	ids, err := s.core.Nodes.Cancel(ctx, nodes.Caller{Tenant: tenant, Sub: s.by, Dispatcher: true}, id, reason)
	return ids, translate(id, err)
}

// holder is the term l names, fence checked, once the Store is known open.
func (s *Store) holder(l *Lease) (leasing.HolderParams, error) {
	if l == nil {
		return leasing.HolderParams{}, fmt.Errorf("%w: nil lease", graph.ErrInvalid)
	}
	if err := s.open(); err != nil {
		return leasing.HolderParams{}, err
	}
	return leasing.HolderParams{Tenant: l.Tenant, NodeID: l.NodeID, By: l.Worker, Session: l.Session, Fence: l.Fence}, nil
}

// check refuses a closed store, a tenant no credential could name and a
// worker or creator no token could carry.
func (s *Store) check(tenant, worker, creator string) error {
	if err := s.open(); err != nil {
		return err
	}
	if !tenancy.ValidTenant(tenant) {
		return fmt.Errorf("%w: tenant %q must match ^[a-z0-9][a-z0-9_-]{0,62}$", graph.ErrInvalid, tenant)
	}
	for _, sub := range []string{worker, creator} {
		if sub == "" {
			continue
		}
		if problem := graphstore.SubjectProblem(sub); problem != "" {
			return fmt.Errorf("%w: identity %q %s", graph.ErrInvalid, sub, problem)
		}
	}
	return nil
}

func (s *Store) open() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

func leaseOf(tenant string, n *records.Node, l *records.Lease, capped bool) *Lease {
	return &Lease{
		Tenant: tenant, NodeID: n.ID, Worker: l.By, Session: l.Session, Fence: l.Fence, Attempt: n.Attempts,
		TTL: time.Duration(l.TTLMS) * time.Millisecond, ClaimedAt: l.ClaimedAt, ExpiresAt: l.ExpiresAt, Capped: capped,
	}
}

// renewed is l with the expiry and TTL of its renewal gl.
func renewed(l *Lease, gl *records.Lease, capped bool) *Lease {
	out := *l
	out.ExpiresAt = gl.ExpiresAt
	out.TTL = time.Duration(gl.TTLMS) * time.Millisecond
	out.Capped = capped
	return &out
}

func nodeSpec(g graph.NodeSpec) nodes.NodeSpec {
	str := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	num := func(v int64) *int64 {
		if v == 0 {
			return nil
		}
		return &v
	}
	spec := nodes.NodeSpec{
		ID: str(g.ID), Type: g.Type, Title: str(g.Title), Body: str(g.Body), Queue: str(g.Queue),
		Priority: num(g.Priority), Target: str(g.Target), Labels: g.Labels, Props: g.Props,
		MaxAttempts: num(g.MaxAttempts), RunAt: g.RunAt, Parent: str(g.Parent), DependsOn: g.DependsOn,
		DelayMS: num(g.Delay.Milliseconds()), TimeoutMS: num(g.Timeout.Milliseconds()),
	}
	return spec
}
