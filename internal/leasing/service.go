package leasing

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/startstop"
	"github.com/tether-run/tether/internal/testsignal"
)

// Limits are the tenant policy values a lease decision needs.
type Limits struct {
	TTLDefault           time.Duration
	TTLMax               time.Duration
	MaxLeasesPerIdentity int64
}

// LimitsFunc returns the limits of a tenant.
type LimitsFunc func(ctx context.Context, tenant string) (Limits, error)

// Config wires a Service.
type Config struct {
	Store  *graphstore.Store
	Clock  clock.Clock
	Logger *slog.Logger
	Limits LimitsFunc
	// ReaperInterval is the most an expiry may wait for the reaper.
	ReaperInterval time.Duration
}

// Service grants and ends leases. All of its writes run on the store's writer.
type Service struct {
	startstop.BaseStartStop // runs the reaper between Start and Stop

	// TestSignals tell tests what the reaper did; off unless a test enables
	// them.
	TestSignals TestSignals

	store  *graphstore.Store
	clock  clock.Clock
	log    *slog.Logger
	limits LimitsFunc

	deadlines *deadlines
	reaper    *reaper

	countsMu sync.Mutex
	counts   map[holderRef]int64 // live leases per identity

	stats      Stats
	identities sync.Map // holderRef -> true: identity nodes known to exist
}

// TestSignals are the reaper's signals to tests.
type TestSignals struct {
	// Reaped carries how many due leases one reap settled (or moved, when
	// renewed meanwhile), once the reap is durable and readers see it.
	Reaped testsignal.Signal[int]
}

type holderRef struct{ tenant, sub string }

// Stats are running totals for metrics.
type Stats struct {
	Claims   atomic.Int64
	Renewals atomic.Int64
	Expiries atomic.Int64
	Live     atomic.Int64
}

// New builds a Service. Call Start to rebuild the deadline heap from the store
// and start the reaper.
func New(cfg Config) *Service {
	cfg.Clock = clock.Or(cfg.Clock, cfg.Store.Clock())
	cfg.Logger = logger.OrDiscard(cfg.Logger)
	if cfg.ReaperInterval <= 0 {
		cfg.ReaperInterval = time.Second
	}
	s := &Service{
		store: cfg.Store, clock: cfg.Clock, log: cfg.Logger, limits: cfg.Limits,
		deadlines: newDeadlines(),
		counts:    map[holderRef]int64{},
	}
	s.reaper = newReaper(s, cfg.ReaperInterval)
	return s
}

// Stats returns the running totals.
func (s *Service) Stats() *Stats { return &s.stats }

// Outcomes of an assigned edge, set when it is retired (lifecycle's).
const (
	OutcomeDone      = lifecycle.OutcomeDone
	OutcomeFailed    = lifecycle.OutcomeFailed
	OutcomeReleased  = lifecycle.OutcomeReleased
	OutcomeExpired   = lifecycle.OutcomeExpired
	OutcomeCancelled = lifecycle.OutcomeCancelled
	OutcomeTakenOver = lifecycle.OutcomeTakenOver
)

// Deadline is the instant the current run of n ends on its own: the lease
// expiry, or the run's timeout when that comes first.
func Deadline(n *records.Node) time.Time {
	l := n.Lease
	if l == nil {
		return time.Time{}
	}
	d := l.ExpiresAt
	if n.TimeoutMS != nil {
		if t := l.ClaimedAt.Add(duration.FromMS(*n.TimeoutMS)); t.Before(d) {
			d = t
		}
	}
	return d
}

// Live reports whether n holds a lease that has not ended at now. An expired
// lease is dead at its expiry instant, whether or not the reaper ran.
func Live(n *records.Node, now time.Time) bool {
	return n.Lease != nil && now.Before(Deadline(n))
}

func timedOut(n *records.Node, now time.Time) bool {
	if n.Lease == nil || n.TimeoutMS == nil {
		return false
	}
	t := n.Lease.ClaimedAt.Add(duration.FromMS(*n.TimeoutMS))
	return !now.Before(t) && t.Before(n.Lease.ExpiresAt)
}

// track adjusts the in-memory views (deadline heap, per-identity counts)
// once the transaction that changed n's lease from before commits. Every
// change of a lease in this package calls it; EndRun calls it for every
// lease it ends (track), so callers in other packages never do.
func (s *Service) track(tx *graphstore.Tx, before *records.Lease, n *records.Node) {
	ref := nodeRef{n.Tenant, n.ID}
	var deadline time.Time
	if n.Lease != nil {
		deadline = Deadline(n)
	}
	var by, newBy string
	queue := n.Queue
	if before != nil {
		by = before.By
	}
	if n.Lease != nil {
		newBy = n.Lease.By
	}
	tx.OnCommit(func() {
		if newBy != by {
			s.countsMu.Lock()
			if by != "" {
				s.adjustCount(holderRef{n.Tenant, by}, -1)
			}
			if newBy != "" {
				s.adjustCount(holderRef{n.Tenant, newBy}, +1)
			}
			s.countsMu.Unlock()
		}
		if deadline.IsZero() {
			s.deadlines.remove(ref)
			if by != "" && queue != "" {
				s.store.Kick(n.Tenant, queue) // a running slot freed up (max_running)
			}
			return
		}
		if s.deadlines.set(ref, deadline) {
			s.reaper.poke(deadline)
		}
	})
}

// adjustCount must be called with countsMu held.
func (s *Service) adjustCount(h holderRef, delta int64) {
	s.counts[h] += delta
	s.stats.Live.Add(delta)
	if s.counts[h] <= 0 {
		delete(s.counts, h)
	}
}

// LiveCount is how many leases sub holds in tenant, as of the last commit.
func (s *Service) LiveCount(tenant, sub string) int64 {
	s.countsMu.Lock()
	defer s.countsMu.Unlock()
	return s.counts[holderRef{tenant, sub}]
}

// assignedEdge returns the live assigned edge from node id to sub, or nil.
func assignedEdge(tx *graphstore.Tx, tenant, id, sub string) (*records.Edge, error) {
	return tx.EdgeFind(tenant, id, graphstore.EdgeAssigned, graphstore.IdentityID(sub))
}

// EndRun ends the current lease of n inside tx: the holder's assigned edge is
// retired with outcome, the lease dropped, n's LastRun set, and the
// in-memory views (deadline heap, the holder's lease count) told, once tx
// commits (track). n is modified in place; the caller sets the new status
// and stores n with NodePut. It does nothing when n holds no lease. It is
// the lifecycle.Runs of the transitions.
func (s *Service) EndRun(tx *graphstore.Tx, n *records.Node, outcome, by string) error {
	l := n.Lease
	if l == nil {
		return nil
	}
	e, err := tx.RunEdge(n, l.By)
	if err != nil {
		return err
	}
	if e != nil {
		if err := tx.EdgeRetire(n.Tenant, e, by, map[string]any{"outcome": outcome}); err != nil {
			return err
		}
	}
	n.LastRun = &records.RunEnd{By: l.By, Fence: l.Fence, Outcome: outcome, At: tx.Now().UTC()}
	n.Lease = nil
	n.Progress = nil
	s.track(tx, l, n)
	return nil
}

var _ lifecycle.Runs = (*Service)(nil)
