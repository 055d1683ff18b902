package lifecycle

import (
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// Runs ends the current run (lease) of a node. The leasing package implements
// it: ending a lease also moves its in-memory views (the deadline heap, the
// holder's lease count), which are the leasing package's. Transitions that end
// a run take it as an argument, so neither lease nor work holds the other.
type Runs interface {
	// EndRun retires the holder's assigned edge with outcome, drops the
	// lease, sets LastRun and clears progress; it does nothing without a
	// lease. It does not write n: the transition does.
	EndRun(tx *graphstore.Tx, n *records.Node, outcome, by string) error
}

// Outcomes of an assigned edge, set when it is retired.
const (
	OutcomeDone      = "done"
	OutcomeFailed    = "failed"
	OutcomeReleased  = "released"
	OutcomeExpired   = "expired"
	OutcomeCancelled = "cancelled"
	OutcomeTakenOver = "taken_over"
)

// SystemIdentity is the `by` of changes the server makes on its own.
const SystemIdentity = graphstore.SystemSubject

// OnChildFailFail is the on_child_fail under which a child that ends failed,
// dead or cancelled fails its parent.
const OnChildFailFail = "fail"

// assignedEdge returns the live assigned edge from node id to sub, or nil.
func assignedEdge(tx *graphstore.Tx, tenant, id, sub string) (*records.Edge, error) {
	return tx.EdgeFind(tenant, id, graphstore.EdgeAssigned, graphstore.IdentityID(sub))
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
