package leasing

import (
	"context"
	"fmt"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// ReleaseParams ask to drop a lease.
type ReleaseParams struct {
	HolderParams
	Reason string
	// To hands the node to that identity: it becomes the node's target, so
	// only it can claim the node next.
	To string
}

// Release drops the caller's lease, retires its assigned edge (outcome
// released), gives back the attempt the claim counted and puts the node back
// at rest. Releasing a node the caller holds no lease on succeeds and retires
// any lingering assigned edge of the caller. It returns the node as stored.
func (s *Service) Release(ctx context.Context, p ReleaseParams) (*records.Node, error) {
	if problem := graphstore.SubjectProblem(p.To); p.To != "" && problem != "" {
		return nil, fault.Invalidf("to", "is not a valid identity: it %s", problem)
	}
	var out *records.Node
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(p.Tenant, p.NodeID)
		if err != nil {
			return err
		}
		out, err = s.ReleaseTx(tx, n, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error releasing node: %w", err)
	}
	return out, nil
}

// ReleaseTx is Release inside an open transaction.
func (s *Service) ReleaseTx(tx *graphstore.Tx, n *records.Node, p ReleaseParams) (*records.Node, error) {
	now := tx.Now()
	if n.Lease != nil && !Live(n, now) {
		if err := s.expireTx(tx, n); err != nil {
			return nil, err
		}
	}
	if n.Lease == nil {
		// Nothing held: close a lingering edge of the caller, if any.
		e, err := assignedEdge(tx, n.Tenant, n.ID, p.By)
		if err != nil || e == nil {
			return n, err
		}
		return n, tx.EdgeRetire(n.Tenant, e, p.By, map[string]any{"outcome": OutcomeReleased})
	}
	if n.Lease.By != p.By && !p.Override {
		return nil, &fault.Conflict{Reason: "node is leased by another identity", Holder: n.Lease.By, ExpiresAt: n.Lease.ExpiresAt}
	}
	if err := CheckHolder(n, p.HolderParams, now); err != nil {
		return nil, err
	}
	if err := lifecycle.Release(tx, s, n, lifecycle.ReleaseParams{By: p.By, Reason: p.Reason, To: p.To}); err != nil {
		return nil, err
	}
	return n, nil
}
