package leasing

import (
	"context"
	"time"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// SystemIdentity is the `by` of changes the server makes on its own.
const SystemIdentity = lifecycle.SystemIdentity

// expireTx settles a lease that has ended on its own (expired or timed out)
// through lifecycle.Expire.
func (s *Service) expireTx(tx *graphstore.Tx, n *records.Node) error {
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
	return s.store.UpdateUrgent(context.Background(), func(tx *graphstore.Tx) error {
		// Urgent writes return once applied; the signal waits until
		// readers see them.
		tx.OnDurable(func() { s.TestSignals.Reaped.Signal(len(refs)) })
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
}

func newReaper(s *Service, interval time.Duration) *reaper {
	return &reaper{s: s, interval: interval, wake: make(chan struct{}, 1)}
}

// poke wakes the reaper because a deadline earlier than the one it sleeps
// towards may have arrived.
func (r *reaper) poke(time.Time) {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run reaps until ctx, the service's stopping context, ends.
func (r *reaper) run(ctx context.Context) {
	clk := r.s.clock
	for {
		if ctx.Err() != nil {
			return
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
		case <-ctx.Done():
			t.Stop()
			return
		}
		t.Stop()
	}
}

// Start rebuilds the in-memory views from the store and starts the reaper.
// Every lease that the previous server (the one before a restart, or the
// shard's previous owner on etcd) may still have been renewing gets its full
// TTL afresh from now: its holder could not renew while no server served it,
// and a renewal that server answered may not have been made durable (Renew
// is eager), so only now + TTL is sure to cover every expiry it promised.
// The others stay dead and are reaped at once. Which leases those are is
// decided by renewalHorizon.
//
// Start and Stop are startstop's: Stop ends the reaper and waits for it, and
// a second Start does nothing.
func (s *Service) Start(ctx context.Context) error {
	loopCtx, ok, started, stopped := s.StartInit(ctx)
	if !ok {
		return nil
	}
	if err := s.rebuild(ctx); err != nil {
		stopped()
		return err
	}
	go func() {
		started()
		defer stopped()
		s.reaper.run(loopCtx)
	}()
	return nil
}

// rebuild tracks every persisted lease, giving the ones the previous server
// may have renewed their full TTL afresh (see Start).
func (s *Service) rebuild(ctx context.Context) error {
	var refs []nodeRef
	if err := s.store.View(func(tx *graphstore.Tx) error {
		return tx.LiveLeaseIDs("", "", func(tenant, id string) (bool, error) {
			refs = append(refs, nodeRef{tenant, id})
			return true, nil
		})
	}); err != nil {
		return err
	}
	horizon, err := s.renewalHorizon(refs)
	if err != nil {
		return err
	}
	for len(refs) > 0 {
		chunk := refs[:min(len(refs), 1000)]
		refs = refs[len(chunk):]
		err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
			now := tx.Now()
			for _, ref := range chunk {
				n, err := tx.NodeGet(ref.tenant, ref.id)
				if err != nil {
					return err
				}
				if n.Lease == nil {
					continue
				}
				if n.Lease.ExpiresAt.After(horizon) {
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
	return nil
}

// renewalHorizon is the instant after which a stored lease may have been
// renewed by a write the previous server answered and did not make durable.
//
// Writes become durable in the order they were applied, so the ones lost
// were all applied after every stored one. A renewal is granted only to a
// live lease: the first lost write of a lease, if a renewal, came before its
// stored expiry and after every stored write. The newest time any stored
// lease was claimed or renewed at is therefore a lower bound on every lost
// renewal, and a lease whose stored expiry is not after it cannot have been
// renewed since: it ended at its stored expiry, as readers were told. Every
// other lease may have been; its holder may hold an answer up to the moment
// the previous server stopped answering plus its TTL, and that moment is
// before now (on etcd, the previous owner answers only while its etcd lease
// is surely alive, and a new owner is elected only once it has expired:
// package cluster).
//
// The times compared are all the previous server's own (stored), so the
// rule holds whatever the offset between its clock and this one's.
func (s *Service) renewalHorizon(refs []nodeRef) (time.Time, error) {
	var h time.Time
	err := s.store.View(func(tx *graphstore.Tx) error {
		for _, ref := range refs {
			n, err := tx.NodeGet(ref.tenant, ref.id)
			if err != nil {
				return err
			}
			if l := n.Lease; l != nil {
				h = latest(h, l.ClaimedAt, l.RenewedAt)
			}
		}
		return nil
	})
	return h, err
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}
