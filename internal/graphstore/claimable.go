package graphstore

import (
	"github.com/tether-run/tether/internal/records"

	"github.com/tether-run/tether/internal/indexes"
)

// The claimable rule: whether a node may be claimed now, apart from its
// lease and its attempts (the leasing package's). It is decided here, beside
// the ready index, from what the store keeps in memory, and the index and
// the claim gate share it: the ready index holds the queued nodes that are
// not blocked (indexes' NodeState.ready) and offers those whose run_at has
// come and whose target and filters match the claimer; every claim, from
// claim-next or by id, applies the whole rule to the record it is about to
// change (ClaimRefusals, through lifecycle.Claimable). Naming what blocks a
// node is an explanation of a refusal, not part of the rule
// (lifecycle.Blocking).

// Refusals is the set of reasons the claimable rule refuses a node; zero: it
// may be claimed.
type Refusals uint8

const (
	RefusedNotAtRest Refusals = 1 << iota // not open or queued
	RefusedBlocked                        // an unmet dependency or an unfinished child
	RefusedDelayed                        // run_at has not come
	RefusedPaused                         // its queue is paused
	RefusedFull                           // its queue is at its max_running
	RefusedReserved                       // reserved (target) for another identity
	RefusedLapsed                         // at rest past its start_by: it ends expired
)

// ClaimRefusals applies the claimable rule to n as by would claim it, at
// tx's instant: at rest, not blocked, run_at come, its queue neither paused
// nor at its max_running, reserved for by or no one, and not past its
// start_by (a lapsed node is never handed out, whether or not it has been
// ended expired yet). It returns the
// queue's settings it read (zero for a node without a queue).
func (tx *Tx) ClaimRefusals(n *records.Node, by string) (Refusals, records.QueueSettings, error) {
	var r Refusals
	var q records.QueueSettings
	if !n.Status.AtRest() {
		r |= RefusedNotAtRest
	}
	if st := tx.state(indexes.NodeRef{Tenant: n.Tenant, ID: n.ID}); st != nil && st.Blocked() {
		r |= RefusedBlocked
	}
	if n.Lapsed(tx.Now()) {
		r |= RefusedLapsed
	}
	if n.RunAt != nil && n.RunAt.After(tx.Now()) {
		r |= RefusedDelayed
	}
	if n.Queue != "" {
		var err error
		if q, err = tx.QueueSettingsGet(n.Tenant, n.Queue); err != nil {
			return r, q, err
		}
		if q.Paused {
			r |= RefusedPaused
		}
		if q.MaxRunning > 0 && tx.QueueCount(n.Tenant, n.Queue, records.StatusRunning) >= q.MaxRunning {
			r |= RefusedFull
		}
	}
	if n.Target != "" && n.Target != by {
		r |= RefusedReserved
	}
	return r, q, nil
}
