package lifecycle

import (
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// ReleaseParams drop a lease before its run ends.
type ReleaseParams struct {
	By     string
	Reason string
	// To hands the node to that identity: it becomes the node's target.
	To string
}

// Release puts a running node back at rest: the run ends (outcome released,
// or taken_over when p.By is not the holder), the attempt the claim counted
// is given back, the node is handed to p.To when set, with the released
// event. The caller has checked that p.By may act on the lease.
func Release(tx *graphstore.Tx, runs Runs, n *records.Node, p ReleaseParams) error {
	if err := check(OpRelease, n, n.RestStatus()); err != nil {
		return err
	}
	outcome := OutcomeReleased
	if n.Lease.By != p.By {
		outcome = OutcomeTakenOver
	}
	before := *n.Lease
	if err := runs.EndRun(tx, n, outcome, p.By); err != nil {
		return err
	}
	if n.Attempts > 0 {
		n.Attempts-- // a voluntary release gives its attempt back
	}
	n.Status = n.RestStatus()
	if p.To != "" {
		n.Target = p.To
		// A hand-off keeps the run's slots for the identity it names.
		n.SlotHeld = len(n.ConcurrencyKeys) > 0
	}
	if err := tx.NodePut(n); err != nil {
		return err
	}
	data := records.Data().Uint("fence", before.Fence).Str("holder", before.By).Str("status", string(n.Status))
	if p.Reason != "" {
		data = data.Str("reason", p.Reason)
	}
	if p.To != "" {
		data = data.Str("to", p.To)
	}
	return tx.EmitData(n.Tenant, records.EventReleased, n.ID, p.By, data.Done())
}
