package leasing

import (
	"context"
	"fmt"
	"time"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// ClaimParams ask for a lease on one node.
type ClaimParams struct {
	Tenant  string
	NodeID  string
	By      string // the authenticated identity; never a request argument
	Session string
	TTL     time.Duration // 0: the tenant default
}

// ClaimResult is a granted (or renewed) lease.
type ClaimResult struct {
	Renewed bool
	Lease   *records.Lease
	Edge    *records.Edge
	Node    *records.Node
	// Capped is set when the asked TTL was above the tenant maximum.
	Capped bool
	TTLMax time.Duration
}

// Claim takes the node for p.By: a new lease (attempts+1, a new fence, one
// assigned edge), or a renewal when p.By already holds it.
func (s *Service) Claim(ctx context.Context, p ClaimParams) (*ClaimResult, error) {
	lim, err := s.limits(ctx, p.Tenant)
	if err != nil {
		return nil, err
	}
	var res *ClaimResult
	err = s.store.Update(ctx, func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(p.Tenant, p.NodeID)
		if err != nil {
			return err
		}
		res, err = s.ClaimTx(tx, n, p, lim)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error claiming node: %w", err)
	}
	return res, nil
}

// ClaimTx is Claim inside an open transaction, for claim-next.
func (s *Service) ClaimTx(tx *graphstore.Tx, n *records.Node, p ClaimParams, lim Limits) (*ClaimResult, error) {
	now := tx.Now()
	ttl, capped := effectiveTTL(p.TTL, lim)
	res := &ClaimResult{Capped: capped, TTLMax: lim.TTLMax}

	if n.Lease != nil && !Live(n, now) {
		// The lease is already dead; settle it before deciding.
		if err := s.expireTx(tx, n); err != nil {
			return nil, err
		}
	}
	if graphstore.IsIdentityID(n.ID) {
		return nil, &fault.NotClaimable{Reason: fault.ReasonTerminal, Status: string(n.Status), Detail: "identity nodes stand for callers; they are not work"}
	}
	if n.Lease != nil {
		if n.Lease.By != p.By {
			return nil, &fault.Conflict{Reason: "node is leased by another identity", Holder: n.Lease.By, ExpiresAt: n.Lease.ExpiresAt}
		}
		// Re-claiming your own live claim renews it.
		before := *n.Lease
		n.Lease.TTLMS = ttl.Milliseconds()
		n.Lease.RenewedAt = now.UTC()
		n.Lease.ExpiresAt = now.Add(ttl).UTC()
		if p.Session != "" {
			n.Lease.Session = p.Session
		}
		if err := tx.NodePutQuiet(n); err != nil {
			return nil, err
		}
		s.track(tx, &before, n)
		e, err := assignedEdge(tx, n.Tenant, n.ID, p.By)
		if err != nil {
			return nil, err
		}
		tx.OnCommit(func() { s.stats.Renewals.Add(1) })
		res.Renewed, res.Lease, res.Edge, res.Node = true, n.Lease, e, n
		return res, nil
	}
	if n.Status.Terminal() {
		return nil, &fault.NotClaimable{Reason: fault.ReasonTerminal, Status: string(n.Status)}
	}
	if n.Attempts >= n.MaxAttempts {
		return nil, &fault.NotClaimable{Reason: fault.ReasonTerminal, Status: string(n.Status)}
	}
	if err := lifecycle.Claimable(tx, n, p.By); err != nil {
		return nil, err
	}
	if lim.MaxLeasesPerIdentity > 0 && s.LiveCount(n.Tenant, p.By) >= lim.MaxLeasesPerIdentity {
		return nil, &fault.RateLimited{Reason: fmt.Sprintf("identity holds %d leases, the tenant's max_leases_per_identity", lim.MaxLeasesPerIdentity), RetryAfter: time.Second}
	}
	if err := lifecycle.Admit(tx, n); err != nil {
		return nil, err
	}
	if err := s.ensureIdentity(tx, n.Tenant, p.By); err != nil {
		return nil, err
	}
	edge, err := lifecycle.Claim(tx, n, lifecycle.ClaimParams{By: p.By, Session: p.Session, TTL: ttl})
	if err != nil {
		return nil, err
	}
	s.track(tx, nil, n)
	tx.OnCommit(func() { s.stats.Claims.Add(1) })
	res.Lease, res.Edge, res.Node = n.Lease, edge, n
	return res, nil
}

// HeldTx is the claim p.By made of n under fence, as it stands now, for a
// repeat of a claim-next made under an Idempotency-Key: the lease with its
// current expiry and the assigned edge, changing nothing. ok is false when
// that claim has ended (completed, failed, released, expired, or taken over:
// another fence or holder).
func (s *Service) HeldTx(tx *graphstore.Tx, n *records.Node, p ClaimParams, fence uint64, lim Limits) (res *ClaimResult, ok bool, err error) {
	if !Live(n, tx.Now()) || n.Lease.By != p.By || n.Lease.Fence != fence {
		return nil, false, nil
	}
	e, err := assignedEdge(tx, n.Tenant, n.ID, p.By)
	if err != nil {
		return nil, false, err
	}
	_, capped := effectiveTTL(p.TTL, lim)
	return &ClaimResult{Lease: n.Lease, Edge: e, Node: n, Capped: capped, TTLMax: lim.TTLMax}, true, nil
}

// ensureIdentity makes the identity node of sub on its first claim. Identity
// nodes are never deleted, so once one is known to exist it is remembered.
func (s *Service) ensureIdentity(tx *graphstore.Tx, tenant, sub string) error {
	key := holderRef{tenant, sub}
	if _, ok := s.identities.Load(key); ok {
		return nil
	}
	if err := tx.IdentityEnsure(tenant, sub); err != nil {
		return err
	}
	tx.OnCommit(func() { s.identities.Store(key, true) })
	return nil
}

// effectiveTTL applies the tenant default and cap.
func effectiveTTL(asked time.Duration, lim Limits) (time.Duration, bool) {
	if asked <= 0 {
		asked = lim.TTLDefault
	}
	if lim.TTLMax > 0 && asked > lim.TTLMax {
		return lim.TTLMax, true
	}
	return asked, false
}

// HolderParams identify the caller acting on a lease it claims to hold.
type HolderParams struct {
	Tenant  string
	NodeID  string
	By      string
	Session string
	Fence   uint64 // 0: not checked
	// Override lets a dispatcher act on another identity's lease.
	Override bool
}

// CheckHolder returns nil when p may act on n's live lease: p.By holds it (or
// p.Override), and the fence, when given, is the lease's.
func CheckHolder(n *records.Node, p HolderParams, now time.Time) error {
	if !Live(n, now) {
		return &fault.LeaseLost{Reason: "no live lease on the node", Holder: ""}
	}
	if n.Lease.By != p.By && !p.Override {
		return &fault.LeaseLost{Reason: "the lease is held by another identity", Holder: n.Lease.By}
	}
	if p.Fence != 0 && p.Fence != n.Lease.Fence {
		return &fault.LeaseLost{Reason: fmt.Sprintf("fence %d is stale; the current fence is %d", p.Fence, n.Lease.Fence), Holder: n.Lease.By}
	}
	return nil
}

// RenewResult is a renewed lease.
type RenewResult struct {
	Node  *records.Node
	Lease *records.Lease
}

// Renew pushes the lease expiry to now + its TTL. It is no graph change beyond
// the lease and emits no event. It is answered, and shown to readers, once
// applied, before its record is durable (UpdateEager): a restart, or a new
// owner of an etcd shard, gives every lease a lost renewal may have touched
// its full TTL afresh (Start), so a lost renewal takes nothing from its
// holder nor from what a reader saw. A read that starts after its answer
// shows the new expiry. RenewTx reads and writes the node's record only,
// which UpdateEager requires.
func (s *Service) Renew(ctx context.Context, p HolderParams) (*RenewResult, error) {
	var res *RenewResult
	err := s.store.UpdateEager(ctx, func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(p.Tenant, p.NodeID)
		if err != nil {
			return err
		}
		res, err = s.RenewTx(tx, n, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error renewing lease: %w", err)
	}
	return res, nil
}

// RenewTx is Renew inside an open transaction.
func (s *Service) RenewTx(tx *graphstore.Tx, n *records.Node, p HolderParams) (*RenewResult, error) {
	p.Override = false // nobody renews another's lease
	if err := CheckHolder(n, p, tx.Now()); err != nil {
		return nil, err
	}
	before := *n.Lease
	now := tx.Now()
	n.Lease.RenewedAt = now.UTC()
	n.Lease.ExpiresAt = now.Add(duration.FromMS(n.Lease.TTLMS)).UTC()
	if p.Session != "" {
		n.Lease.Session = p.Session
	}
	if err := tx.NodePutQuiet(n); err != nil {
		return nil, err
	}
	s.track(tx, &before, n)
	tx.OnCommit(func() { s.stats.Renewals.Add(1) })
	return &RenewResult{Node: n, Lease: n.Lease}, nil
}

// ExtendResult is an extended lease.
type ExtendResult struct {
	Lease  *records.Lease
	Capped bool
	TTLMax time.Duration
}

// Extend moves the expiry to min(expires + by, now + the tenant max), never
// earlier than it is. Unlike a renewal it is durable before it is answered
// or seen (Update): it may reach past now + TTL, which the restart rule
// (every live lease gets its TTL afresh) would not give back, and its
// extended event must not be seen before it is durable.
func (s *Service) Extend(ctx context.Context, p HolderParams, by time.Duration) (*ExtendResult, error) {
	if by <= 0 {
		return nil, fault.Invalidf("ms", "must be a positive integer")
	}
	lim, err := s.limits(ctx, p.Tenant)
	if err != nil {
		return nil, err
	}
	var res *ExtendResult
	err = s.store.Update(ctx, func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(p.Tenant, p.NodeID)
		if err != nil {
			return err
		}
		res, err = s.ExtendTx(tx, n, p, by, lim)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error extending lease: %w", err)
	}
	return res, nil
}

// ExtendTx is Extend inside an open transaction.
func (s *Service) ExtendTx(tx *graphstore.Tx, n *records.Node, p HolderParams, by time.Duration, lim Limits) (*ExtendResult, error) {
	p.Override = false
	if err := CheckHolder(n, p, tx.Now()); err != nil {
		return nil, err
	}
	now := tx.Now()
	before := *n.Lease
	want := n.Lease.ExpiresAt.Add(by)
	res := &ExtendResult{TTLMax: lim.TTLMax}
	if limit := now.Add(lim.TTLMax); lim.TTLMax > 0 && want.After(limit) {
		want, res.Capped = limit, true
	}
	if want.Before(n.Lease.ExpiresAt) {
		want = n.Lease.ExpiresAt
	}
	n.Lease.ExpiresAt = want.UTC()
	n.Lease.RenewedAt = now.UTC()
	if p.Session != "" {
		n.Lease.Session = p.Session
	}
	if err := tx.NodePutQuiet(n); err != nil {
		return nil, err
	}
	if err := tx.EmitData(n.Tenant, records.EventExtended, n.ID, p.By, records.Data().
		Uint("fence", n.Lease.Fence).Str("expires_at", records.Stamp(n.Lease.ExpiresAt)).Bool("capped_to_max", res.Capped).
		Done()); err != nil {
		return nil, err
	}
	s.track(tx, &before, n)
	res.Lease = n.Lease
	return res, nil
}
