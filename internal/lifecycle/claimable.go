package lifecycle

import (
	"fmt"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// Claimable returns nil when n may be claimed by `by` now under the
// claimable rule (graphstore.Tx.ClaimRefusals, the rule the ready index shares),
// else the refusal the API answers with: not claimable (terminal, blocked
// with what blocks it, delayed, or its queue paused), rate limited (its
// queue at max_running), or a conflict (reserved for another identity), in
// that order. Whether the caller holds or may take the lease is the lease
// package's to decide first.
func Claimable(tx *graphstore.Tx, n *records.Node, by string) error {
	r, q, err := tx.ClaimRefusals(n, by)
	if err != nil || r == 0 {
		return err
	}
	if r&graphstore.RefusedNotAtRest != 0 {
		return &fault.NotClaimable{Reason: fault.ReasonTerminal, Status: string(n.Status)}
	}
	if r&graphstore.RefusedBlocked != 0 {
		blockedBy, err := Blocking(tx, n)
		if err != nil {
			return err
		}
		if len(blockedBy) > 0 {
			return &fault.NotClaimable{Reason: fault.ReasonBlocked, Status: string(n.Status), BlockedBy: blockedBy}
		}
	}
	switch {
	case r&graphstore.RefusedDelayed != 0:
		return &fault.NotClaimable{Reason: fault.ReasonDelayed, Status: string(n.Status), RunAt: n.RunAt}
	case r&graphstore.RefusedPaused != 0:
		return &fault.NotClaimable{Reason: fault.ReasonBlocked, Status: string(n.Status), BlockedBy: []string{}, Detail: "queue " + n.Queue + " is paused"}
	case r&graphstore.RefusedFull != 0:
		return &fault.RateLimited{Reason: fmt.Sprintf("queue %s is at its max_running of %d", n.Queue, q.MaxRunning), RetryAfter: time.Second}
	case r&graphstore.RefusedReserved != 0:
		return &fault.Conflict{Reason: "node is reserved for " + n.Target + " by handoff", Holder: n.Target}
	}
	return nil
}

// Admit applies flow control to a claim of n that the claimable rule
// allowed (graphstore's FlowAdmit): its keys' limits, budgets and start
// rates, taking the start tokens. Call it last before the claim is made,
// so no token is spent on a claim refused for another reason.
func Admit(tx *graphstore.Tx, n *records.Node) error {
	if len(n.ConcurrencyKeys) == 0 && n.Queue == "" {
		return nil
	}
	var q records.QueueSettings
	if n.Queue != "" {
		var err error
		if q, err = tx.QueueSettingsGet(n.Tenant, n.Queue); err != nil {
			return err
		}
	}
	return tx.FlowAdmit(n, q)
}

// Blocking names what blocks n: its depends_on targets not yet satisfied
// (graphstore.DependencySatisfied) and its children not yet terminal. It walks
// n's edges, so it explains a refusal; the rule itself reads the blocker
// counts.
func Blocking(tx *graphstore.Tx, n *records.Node) ([]string, error) {
	out := []string{}
	deps, err := tx.LiveEdges(n.Tenant, n.ID, graphstore.EdgeDependsOn, graphstore.DirOut)
	if err != nil {
		return out, err
	}
	for _, e := range deps {
		dep, err := tx.NodeGet(n.Tenant, e.To)
		if err != nil {
			return out, err
		}
		if !graphstore.DependencySatisfied(dep.Status, e) {
			out = append(out, dep.ID)
		}
	}
	children, err := tx.LiveEdges(n.Tenant, n.ID, graphstore.EdgeParentOf, graphstore.DirOut)
	if err != nil {
		return out, err
	}
	for _, e := range children {
		child, err := tx.NodeGet(n.Tenant, e.To)
		if err != nil {
			return out, err
		}
		if !child.Status.Terminal() {
			out = append(out, child.ID)
		}
	}
	return out, nil
}
