package nodes

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/startstop"
	"github.com/tether-run/tether/internal/testsignal"
)

// lapseBatch is the most nodes one lapse transaction ends.
const lapseBatch = 256

// LapseReaper ends expired the nodes not claimed by their start_by
// (lifecycle.Lapse). It sleeps until the earliest start_by the store has
// filed (graphstore's lapses.go) or at most one interval, and is woken when
// an earlier one is filed; it never walks the backlog. It is a tidy-up, not
// a gate: the claimable rule refuses a lapsed node whether or not it ran
// (graphstore.RefusedLapsed), and at open it ends every node that lapsed
// while no server ran.
type LapseReaper struct {
	startstop.BaseStartStop

	// TestSignals tell tests what the reaper did; off unless a test
	// enables them.
	TestSignals LapseSignals

	store    *graphstore.Store
	runs     lifecycle.Runs
	clock    clock.Clock
	log      *slog.Logger
	interval time.Duration
	lapsed   atomic.Int64
}

// LapseSignals are the lapse reaper's signals to tests.
type LapseSignals struct {
	// Lapsed carries how many nodes one pass ended expired, once that is
	// durable.
	Lapsed testsignal.Signal[int]
}

// LapseConfig wires a LapseReaper.
type LapseConfig struct {
	Store *graphstore.Store
	// Runs ends a run; a lapsed node has none, but the parent it fails may.
	Runs     lifecycle.Runs
	Clock    clock.Clock
	Logger   *slog.Logger
	Interval time.Duration // the longest it sleeps; a second when zero
}

// NewLapseReaper builds a LapseReaper; Start runs it.
func NewLapseReaper(cfg LapseConfig) *LapseReaper {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	return &LapseReaper{
		store: cfg.Store, runs: cfg.Runs, clock: clock.Or(cfg.Clock, cfg.Store.Clock()),
		log: logger.OrDiscard(cfg.Logger), interval: cfg.Interval,
	}
}

// Lapsed is how many nodes the reaper has ended expired.
func (r *LapseReaper) Lapsed() int64 { return r.lapsed.Load() }

// Start ends every node that lapsed while no server ran, before it
// returns (so a server serves none of them as queued), then runs the reaper
// until Stop.
func (r *LapseReaper) Start(ctx context.Context) error {
	loopCtx, ok, started, stopped := r.StartInit(ctx)
	if !ok {
		return nil
	}
	for {
		due := r.store.LapsesDue(r.clock.Now(), lapseBatch)
		if len(due) == 0 {
			break
		}
		if err := r.reap(ctx, due); err != nil {
			stopped()
			return fmt.Errorf("error ending the nodes that lapsed while stopped: %w", err)
		}
	}
	go func() {
		started()
		defer stopped()
		r.run(loopCtx)
	}()
	return nil
}

func (r *LapseReaper) run(ctx context.Context) {
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	for ctx.Err() == nil {
		now := r.clock.Now()
		if due := r.store.LapsesDue(now, lapseBatch); len(due) > 0 {
			if err := r.reap(ctx, due); err != nil {
				if ctx.Err() == nil {
					r.log.Error("error ending lapsed nodes", "err", err)
				}
			} else {
				continue
			}
		}
		wait := r.interval
		if next, ok := r.store.LapsesNext(); ok && next.Sub(now) < wait {
			wait = max(next.Sub(now), 0)
		}
		t := r.clock.AfterFunc(wait, poke)
		select {
		case <-wake:
		case <-r.store.LapsesWake():
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// reap ends expired those of refs that have lapsed and forgets the others
// (claimed, deleted or requeued since), in one transaction; one written
// since with a later start_by is filed again under it.
func (r *LapseReaper) reap(ctx context.Context, refs []indexes.NodeRef) error {
	return r.store.Update(ctx, func(tx *graphstore.Tx) error {
		ended := 0
		for _, ref := range refs {
			n, err := tx.NodeGet(ref.Tenant, ref.ID)
			if _, gone := err.(*fault.NotFound); gone {
				tx.OnCommit(func() { r.store.LapsesForget(ref) })
				continue
			}
			if err != nil {
				return err
			}
			if !n.Lapsed(tx.Now()) {
				if n.StartBy != nil && n.Status.AtRest() {
					tx.NoteStartBy(n)
				} else {
					tx.OnCommit(func() { r.store.LapsesForget(ref) })
				}
				continue
			}
			tx.OnCommit(func() { r.store.LapsesForget(ref) })
			if _, err := lifecycle.Lapse(tx, r.runs, n); err != nil {
				return err
			}
			ended++
		}
		tx.OnCommit(func() { r.lapsed.Add(int64(ended)) })
		tx.OnDurable(func() { r.TestSignals.Lapsed.Signal(ended) })
		return nil
	})
}
