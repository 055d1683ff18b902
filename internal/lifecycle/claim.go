package lifecycle

import (
	"time"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// ClaimParams are a new lease's holder and TTL.
type ClaimParams struct {
	By      string
	Session string
	TTL     time.Duration
}

// Claim starts a run of a node at rest: attempts+1, a new fence, status
// running, the lease, an assigned edge (a lingering one of the claimer is
// retired first) and the claimed event. The caller has decided that n may be
// claimed (Claimable) and tells its in-memory views once Claim returns.
func Claim(tx *graphstore.Tx, n *records.Node, p ClaimParams) (*records.Edge, error) {
	if err := check(OpClaim, n, records.StatusRunning); err != nil {
		return nil, err
	}
	now := tx.Now()
	n.Attempts++
	n.LastFence++
	n.Status = records.StatusRunning
	n.SlotHeld = false // running holds the slots a hand-off kept
	n.Error = nil
	n.Lease = &records.Lease{
		By: p.By, Session: p.Session, Fence: n.LastFence, TTLMS: p.TTL.Milliseconds(),
		ClaimedAt: now.UTC(), RenewedAt: now.UTC(), ExpiresAt: now.Add(p.TTL).UTC(),
	}
	// A lingering assigned edge of the claimer (a run that ended without one
	// being retired) is closed before the new one is written.
	if e, err := assignedEdge(tx, n.Tenant, n.ID, p.By); err != nil {
		return nil, err
	} else if e != nil {
		if err := tx.EdgeRetire(n.Tenant, e, p.By, map[string]any{"outcome": OutcomeReleased}); err != nil {
			return nil, err
		}
	}
	edge := &records.Edge{
		From: n.ID, Type: graphstore.EdgeAssigned, To: graphstore.IdentityID(p.By),
		Props:     map[string]any{"session": nullable(p.Session), "fence": n.LastFence, "outcome": nil},
		CreatedBy: p.By,
	}
	if err := tx.EdgeInsertKnownNodes(n.Tenant, edge); err != nil {
		return nil, err
	}
	if err := tx.NodePut(n); err != nil {
		return nil, err
	}
	if err := tx.EmitData(n.Tenant, records.EventClaimed, n.ID, p.By, records.Data().
		Uint("fence", n.LastFence).Int("attempt", n.Attempts).StrOrNull("session", p.Session).Int("ttl_ms", p.TTL.Milliseconds()).
		Done()); err != nil {
		return nil, err
	}
	return edge, nil
}
