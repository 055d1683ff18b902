package nodes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/records"
)

// ClaimNextParams ask for the next ready nodes of a queue.
type ClaimNextParams struct {
	Caller
	Queue   string
	Session string
	TTL     time.Duration
	Wait    time.Duration // long poll: answer as soon as a node is ready, or after Wait
	// WaitEnd, when it closes, ends a long poll early with nothing claimed,
	// as if Wait had passed (the server is stopping).
	WaitEnd <-chan struct{}
	Types   []string // when set, only nodes of these types
	Labels  []string // when set, only nodes carrying every one of these labels
	Max     int      // how many nodes at most (1 for claim-next)
	// Idem, when set, makes a repeat of the request within
	// IdempotencyWindow answer the claims the first one made (claimKeyedTx).
	Idem *Idempotency
}

// filter is what the ready mirror offers p: its types and labels, and the
// nodes reserved to its caller or to no one.
func (p ClaimNextParams) filter() indexes.ReadyFilter {
	return indexes.ReadyFilter{Types: p.Types, Labels: p.Labels, Sub: p.Sub}
}

// MaxWait bounds a long poll.
const MaxWait = 60 * time.Second

// ClaimNext claims up to p.Max ready nodes of the queue for the caller:
// highest priority first, then oldest, then id, among nodes whose target is
// unset or the caller. It answers as soon as at least one node could be
// claimed, or with none once p.Wait has passed. Two claims never get the same
// node: the choice is made on the store's single writer.
func (s *Service) ClaimNext(ctx context.Context, p ClaimNextParams) ([]*leasing.ClaimResult, error) {
	got, _, err := s.ClaimNextThrottled(ctx, p)
	return got, err
}

// ClaimNextThrottled is ClaimNext that also says, when it claimed nothing
// because flow control held back the nodes it could have claimed, why: the
// first refusal met (the key, the reason and when a retry may succeed).
// A long poll waits for flow control as for a ready node: until a slot
// frees, the configuration changes, or the refusal's retry-after passes.
func (s *Service) ClaimNextThrottled(ctx context.Context, p ClaimNextParams) ([]*leasing.ClaimResult, *fault.Throttled, error) {
	if !graphstore.ValidQueue(p.Queue) {
		return nil, nil, fault.Invalidf("queue", "must be 1-128 characters of [A-Za-z0-9._:-]")
	}
	if p.Max < 1 {
		p.Max = 1
	}
	lim, err := s.limits(ctx, p.Tenant)
	if err != nil {
		return nil, nil, err
	}
	var deadline <-chan time.Time
	if p.Wait > 0 {
		t := time.NewTimer(min(p.Wait, MaxWait))
		defer t.Stop()
		deadline = t.C
	}
	filter := p.filter()
	stop := func() {}
	defer func() { stop() }()
	for {
		// Subscribe before looking, so a node that turns ready between the
		// look and the wait still wakes us. Only a long poll subscribes, and
		// only to nodes its filter matches.
		var changed, flowed <-chan struct{}
		if deadline != nil {
			stop()
			changed, stop = s.store.ReadyWatch(p.Tenant, p.Queue, filter)
			flowed = s.store.FlowWatch(p.Tenant)
		}
		var throttled *fault.Throttled
		got, replayed, err := s.claimChunks(ctx, p, filter, lim, &throttled)
		if err != nil {
			return nil, nil, fmt.Errorf("error claiming from queue: %w", err)
		}
		if replayed {
			// The claims are the first request's: they stay with it even
			// when this repeat's caller went away too.
			return got, nil, nil
		}
		if len(got) > 0 && ctx.Err() != nil {
			// The caller went away while its claim committed: nobody will run
			// these nodes, so give them back now rather than after their TTL.
			s.releaseUndelivered(p, got)
			return nil, nil, ctx.Err()
		}
		if len(got) > 0 {
			return got, nil, nil
		}
		if deadline == nil {
			return nil, throttled, nil
		}
		// A refusal that knows when a retry succeeds (a start token, a
		// budget's next window) is tried again then.
		var retry chan struct{}
		if throttled != nil && throttled.RetryAfter > 0 {
			retry = make(chan struct{})
			t := s.store.Clock().AfterFunc(throttled.RetryAfter, func() { close(retry) })
			defer t.Stop()
		}
		s.TestSignals.Parked.Signal(p.Queue)
		select {
		case <-changed:
		case <-flowed:
		case <-retry:
		case <-deadline:
			return nil, throttled, nil
		case <-p.WaitEnd:
			return nil, throttled, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// claimChunk bounds the claims one transaction makes. A claims request of a
// thousand runs as several transactions, so the reaper's urgent work and
// other callers' writes run between them instead of waiting behind one long
// transaction; the chunks share one wait for the log (a barrier).
const claimChunk = 64

// claimChunks claims up to p.Max ready nodes, claimChunk per transaction, and
// returns once all of them are durable. replayed reports that p.Idem's key
// had claimed already: got is then what claimKeyedTx replayed.
func (s *Service) claimChunks(ctx context.Context, p ClaimNextParams, filter indexes.ReadyFilter, lim leasing.Limits, throttled **fault.Throttled) (got []*leasing.ClaimResult, replayed bool, err error) {
	bctx, durable := graphstore.WithBarrier(ctx)
	var out []*leasing.ClaimResult
	for len(out) < p.Max {
		q := p
		q.Max = min(claimChunk, p.Max-len(out))
		var got []*leasing.ClaimResult
		first := len(out) == 0
		err := s.store.Update(bctx, func(tx *graphstore.Tx) error {
			var err error
			if p.Idem != nil {
				got, replayed, err = s.claimKeyedTx(tx, q, filter, lim, first, throttled)
				return err
			}
			got, err = s.claimNextTx(tx, q, filter, lim, throttled)
			return err
		})
		if err == nil && replayed {
			// A replay wrote nothing and reads committed claims only.
			return got, true, nil
		}
		var limited *fault.RateLimited
		switch {
		case err != nil && len(out) > 0 && errors.As(err, &limited):
			// At the identity's lease cap: hand out what it got so far.
		case err != nil:
			if werr := durable.Wait(); werr == nil && len(out) > 0 {
				s.releaseUndelivered(p, out)
			}
			return nil, false, err
		}
		out = append(out, got...)
		if err != nil || len(got) < q.Max {
			break
		}
	}
	if err := durable.Wait(); err != nil {
		return nil, false, err
	}
	return out, false, nil
}

// claimKeyedTx is claimNextTx under p.Idem's key. The first transaction of a
// request (first) looks the key up: when a request made claims under it
// within IdempotencyWindow, it answers those of them still held under the
// same claim (holder and fence), as they are now, and claims nothing
// (replayed); one that has ended since is left out. The same key with
// another request is a fault.IdempotencyMismatch. Otherwise it claims as
// claimNextTx does and, when it claimed any node, records them under the key
// in the same transaction; a later chunk of the same request adds its claims
// to the record. A claim that found nothing records nothing, so a repeat of
// it may claim: the first claimed nothing to answer twice.
func (s *Service) claimKeyedTx(tx *graphstore.Tx, p ClaimNextParams, f indexes.ReadyFilter, lim leasing.Limits, first bool, throttled **fault.Throttled) (got []*leasing.ClaimResult, replayed bool, err error) {
	rec, err := tx.ClaimIdempotencyGet(p.Tenant, p.Idem.Key, IdempotencyWindow)
	if err != nil {
		return nil, false, err
	}
	if rec != nil && rec.Hash != p.Idem.Hash {
		return nil, false, &fault.IdempotencyMismatch{Key: p.Idem.Key}
	}
	if first && rec != nil {
		got, err = s.heldClaims(tx, p, rec, lim)
		return got, true, err
	}
	if got, err = s.claimNextTx(tx, p, f, lim, throttled); err != nil || len(got) == 0 {
		return got, false, err
	}
	if rec == nil {
		rec = &records.IdempotencyRecord{Hash: p.Idem.Hash}
	}
	for _, r := range got {
		rec.NodeIDs = append(rec.NodeIDs, r.Node.ID)
		rec.Fences = append(rec.Fences, r.Lease.Fence)
	}
	return got, false, tx.ClaimIdempotencyPut(p.Tenant, p.Idem.Key, rec, IdempotencyWindow)
}

// heldClaims are the claims of rec that p's caller still holds under the
// fence rec names, in rec's order.
func (s *Service) heldClaims(tx *graphstore.Tx, p ClaimNextParams, rec *records.IdempotencyRecord, lim leasing.Limits) ([]*leasing.ClaimResult, error) {
	var out []*leasing.ClaimResult
	for i, id := range rec.NodeIDs {
		if i >= len(rec.Fences) {
			break
		}
		n, err := tx.NodeGet(p.Tenant, id)
		var nf *fault.NotFound
		switch {
		case errors.As(err, &nf):
			continue // deleted since: its claim ended
		case err != nil:
			return nil, err
		}
		res, ok, err := s.leases.HeldTx(tx, n, leasing.ClaimParams{Tenant: p.Tenant, NodeID: id, By: p.Sub, Session: p.Session, TTL: p.TTL}, rec.Fences[i], lim)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, res)
		}
	}
	return out, nil
}

// claimNextTx claims up to p.Max of the queue's ready nodes. A node flow
// control refuses is skipped; the first such refusal is kept in
// *throttled (when throttled is not nil and it holds none yet).
func (s *Service) claimNextTx(tx *graphstore.Tx, p ClaimNextParams, f indexes.ReadyFilter, lim leasing.Limits, throttled **fault.Throttled) ([]*leasing.ClaimResult, error) {
	q, err := tx.QueueSettingsGet(p.Tenant, p.Queue)
	if err != nil || q.Paused {
		return nil, err
	}
	room := p.Max
	if q.MaxRunning > 0 {
		running := s.store.QueueCount(p.Tenant, p.Queue, records.StatusRunning)
		room = min(room, int(q.MaxRunning-running))
	}
	if room <= 0 {
		return nil, nil
	}
	// The per-identity lease cap counts committed leases; the claims of this
	// transaction are bounded here so that one request cannot pass it.
	if lim.MaxLeasesPerIdentity > 0 {
		left := int(lim.MaxLeasesPerIdentity - s.leases.LiveCount(p.Tenant, p.Sub))
		if left <= 0 {
			return nil, &fault.RateLimited{Reason: fmt.Sprintf("identity holds %d leases, the tenant's max_leases_per_identity", lim.MaxLeasesPerIdentity), RetryAfter: time.Second}
		}
		room = min(room, left)
	}
	var out []*leasing.ClaimResult
	var stop error
	// The mirror offers only nodes whose type, labels and target match, as
	// of their last write; eligible checks them again on the record.
	tx.ReadyIDs(p.Tenant, p.Queue, f, func(id string) bool {
		n, err := tx.NodeGet(p.Tenant, id)
		if err != nil {
			stop = err
			return false
		}
		if !eligible(n, p) {
			return true
		}
		res, err := s.leases.ClaimTx(tx, n, leasing.ClaimParams{
			Tenant: p.Tenant, NodeID: id, By: p.Sub, Session: p.Session, TTL: p.TTL,
		}, lim)
		var limited *fault.RateLimited
		var th *fault.Throttled
		switch {
		case err == nil && !res.Renewed:
			out = append(out, res)
			return len(out) < room
		case errors.As(err, &th):
			if throttled != nil && *throttled == nil {
				*throttled = th
			}
			return true
		case errors.As(err, &limited):
			// The caller is at its lease cap: hand out what it got so far.
			if len(out) == 0 {
				stop = err
			}
			return false
		case err != nil && !isSkippable(err):
			stop = err
			return false
		}
		return true
	})
	return out, stop
}

// eligible applies the caller's filters and the node's target to the node as
// read in the transaction, the last word on what the mirror offered.
func eligible(n *records.Node, p ClaimNextParams) bool {
	switch {
	case n.Status != records.StatusQueued, n.Lease != nil:
		return false
	case n.Target != "" && n.Target != p.Sub:
		return false
	case len(p.Types) > 0 && !slices.Contains(p.Types, n.Type):
		return false
	}
	for _, l := range p.Labels {
		if !slices.Contains(n.Labels, l) {
			return false
		}
	}
	return true
}

// isSkippable is a refusal that concerns only this candidate (it turned out
// not ready, or reserved); claim-next moves on to the next one.
func isSkippable(err error) bool {
	var nc *fault.NotClaimable
	var conflict *fault.Conflict
	return errors.As(err, &nc) || errors.As(err, &conflict)
}

// releaseUndelivered releases claims whose answer could not be delivered.
func (s *Service) releaseUndelivered(p ClaimNextParams, got []*leasing.ClaimResult) {
	for _, r := range got {
		_, err := s.leases.Release(context.Background(), leasing.ReleaseParams{
			HolderParams: leasing.HolderParams{Tenant: p.Tenant, NodeID: r.Node.ID, By: p.Sub, Fence: r.Lease.Fence},
			Reason:       "the claimer went away before the answer",
		})
		if err != nil {
			s.log.Warn("error releasing an undelivered claim", "node", r.Node.ID, "err", err)
		}
	}
}
