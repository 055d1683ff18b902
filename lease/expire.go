package lease

import (
	"context"
	"sync"
	"time"

	"github.com/tether-run/tether/fault"
	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/lifecycle"
)

// SystemIdentity is the `by` of changes the server makes on its own.
const SystemIdentity = lifecycle.SystemIdentity

// expireTx settles a lease that has ended on its own (expired or timed out)
// through lifecycle.Expire.
func (s *Service) expireTx(tx *graph.Tx, n *graph.Node) error {
	if _, err := lifecycle.Expire(tx, s, n, timedOut(n, tx.Now())); err != nil {
		return err
	}
	tx.OnCommit(func() { s.stats.Expiries.Add(1) })
	return nil
}

// reapBatch is the most expiries settled in one transaction.
const reapBatch = 256

// reap settles the leases of refs that have ended by now. Refs whose lease
// was renewed meanwhile get their deadline moved instead.
//
// A reap that a crash loses before it is durable leaves the lease's stored
// expiry in the past, so it is reaped again at restart (see Start).
func (s *Service) reap(refs []nodeRef) error {
	return s.store.UpdateUrgent(context.Background(), func(tx *graph.Tx) error {
		now := tx.Now()
		for _, ref := range refs {
			n, err := tx.NodeGet(ref.tenant, ref.id)
			if _, gone := err.(*fault.NotFound); gone {
				tx.OnCommit(func() { s.deadlines.remove(ref) })
				continue
			}
			if err != nil {
				return err
			}
			switch {
			case n.Lease == nil:
				tx.OnCommit(func() { s.deadlines.remove(ref) })
			case Live(n, now):
				d := Deadline(n)
				tx.OnCommit(func() { s.deadlines.set(ref, d) })
			default:
				if err := s.expireTx(tx, n); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// reaper settles expired leases. It sleeps until the earliest deadline (or at
// most one interval, as a safety net), never scanning the store on a timer.
type reaper struct {
	s        *Service
	interval time.Duration
	wake     chan struct{}
	stop     chan struct{} // closed once, by Stop
	stopOnce sync.Once
	stopped  chan struct{}
}

func newReaper(s *Service, interval time.Duration) *reaper {
	return &reaper{s: s, interval: interval, wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
}

// poke wakes the reaper because a deadline earlier than the one it sleeps
// towards may have arrived.
func (r *reaper) poke(time.Time) {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reaper) run() {
	defer close(r.stopped)
	clk := r.s.clock
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		now := clk.Now()
		wait := r.interval
		if due := r.s.deadlines.due(now, reapBatch); len(due) > 0 {
			if err := r.s.reap(due); err != nil {
				r.s.log.Error("error reaping expired leases", "err", err)
			} else {
				continue
			}
		} else if next, ok := r.s.deadlines.next(); ok && next.Sub(now) < wait {
			wait = next.Sub(now)
		}
		t := clk.AfterFunc(wait, func() { r.poke(time.Time{}) })
		select {
		case <-r.wake:
		case <-r.stop:
			t.Stop()
			return
		}
		t.Stop()
	}
}

// Start rebuilds the in-memory views from the store and starts the reaper.
// Every lease that is still live gets its full TTL afresh from now (its
// holder could not renew while the server was down; a restart must never
// take a lease from a live holder). A lease whose stored expiry has passed
// stays dead and is reaped at once.
func (s *Service) Start(ctx context.Context) error {
	var refs []nodeRef
	if err := s.store.View(func(tx *graph.Tx) error {
		return tx.LiveLeaseIDs("", "", func(tenant, id string) (bool, error) {
			refs = append(refs, nodeRef{tenant, id})
			return true, nil
		})
	}); err != nil {
		return err
	}
	for len(refs) > 0 {
		chunk := refs[:min(len(refs), 1000)]
		refs = refs[len(chunk):]
		err := s.store.Update(ctx, func(tx *graph.Tx) error {
			now := tx.Now()
			for _, ref := range chunk {
				n, err := tx.NodeGet(ref.tenant, ref.id)
				if err != nil {
					return err
				}
				if n.Lease == nil {
					continue
				}
				if now.Before(n.Lease.ExpiresAt) {
					if fresh := now.Add(duration.FromMS(n.Lease.TTLMS)); fresh.After(n.Lease.ExpiresAt) {
						n.Lease.ExpiresAt = fresh.UTC()
						if err := tx.NodePutQuiet(n); err != nil {
							return err
						}
					}
				}
				s.track(tx, nil, n)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	s.started.Store(true)
	go s.reaper.run()
	return nil
}

// Stop stops the reaper and waits for it.
func (s *Service) Stop() {
	if !s.started.Load() {
		return
	}
	s.reaper.stopOnce.Do(func() { close(s.reaper.stop) })
	<-s.reaper.stopped
}
