package work

import (
	"fmt"
	"time"

	"github.com/tether-run/tether/fault"
	"github.com/tether-run/tether/graph"
)

// Readiness says whether a node at rest may run now and, if not, why.
type Readiness struct {
	Ready     bool
	BlockedBy []string   // unfinished dependencies and children
	RunAt     *time.Time // set while run_at is in the future
	Paused    bool       // its queue is paused
}

// ReadinessTx computes n's readiness at tx's instant: open or queued, run_at
// passed, every depends_on target done (or ended, with on_fail: ignore), and
// every child terminal, and its queue not paused. An identity node is never
// ready: it stands for a caller, it is not work.
func ReadinessTx(tx *graph.Tx, n *graph.Node) (Readiness, error) {
	r := Readiness{BlockedBy: []string{}}
	if !n.Status.AtRest() || n.Type == graph.IdentityType {
		return r, nil
	}
	if n.RunAt != nil && n.RunAt.After(tx.Now()) {
		r.RunAt = n.RunAt
	}
	// The blocker counts say whether anything blocks; only then are the
	// edges walked to name what.
	pendingDeps, pendingChildren, err := tx.Blockers(n.Tenant, n.ID)
	if err != nil {
		return r, err
	}
	if pendingDeps == 0 && pendingChildren == 0 {
		return finishReadiness(tx, n, r)
	}
	deps, err := tx.LiveEdges(n.Tenant, n.ID, graph.EdgeDependsOn, graph.DirOut)
	if err != nil {
		return r, err
	}
	for _, e := range deps {
		dep, err := tx.NodeGet(n.Tenant, e.To)
		if err != nil {
			return r, err
		}
		if graph.DependencySatisfied(dep.Status, e) {
			continue
		}
		r.BlockedBy = append(r.BlockedBy, dep.ID)
	}
	children, err := tx.LiveEdges(n.Tenant, n.ID, graph.EdgeParentOf, graph.DirOut)
	if err != nil {
		return r, err
	}
	for _, e := range children {
		child, err := tx.NodeGet(n.Tenant, e.To)
		if err != nil {
			return r, err
		}
		if !child.Status.Terminal() {
			r.BlockedBy = append(r.BlockedBy, child.ID)
		}
	}
	return finishReadiness(tx, n, r)
}

func finishReadiness(tx *graph.Tx, n *graph.Node, r Readiness) (Readiness, error) {
	if n.Queue != "" {
		q, err := tx.QueueSettingsGet(n.Tenant, n.Queue)
		if err != nil {
			return r, err
		}
		r.Paused = q.Paused
	}
	r.Ready = r.RunAt == nil && len(r.BlockedBy) == 0 && !r.Paused
	return r, nil
}

// Gate is the lease.Gate of this package: a node may be claimed when it is
// ready, its queue is under its max_running, and it is not reserved for
// another identity. Readiness reads the blocker counts and walks the edges
// only to say what blocks a refused claim.
func Gate(tx *graph.Tx, n *graph.Node, by string) error {
	if !n.Status.AtRest() {
		return &fault.NotClaimable{Reason: fault.ReasonTerminal, Status: string(n.Status)}
	}
	r, err := ReadinessTx(tx, n)
	if err != nil {
		return err
	}
	switch {
	case len(r.BlockedBy) > 0:
		return &fault.NotClaimable{Reason: fault.ReasonBlocked, Status: string(n.Status), BlockedBy: r.BlockedBy}
	case r.RunAt != nil:
		return &fault.NotClaimable{Reason: fault.ReasonDelayed, Status: string(n.Status), RunAt: r.RunAt}
	case r.Paused:
		return &fault.NotClaimable{Reason: fault.ReasonBlocked, Status: string(n.Status), BlockedBy: []string{}, Detail: "queue " + n.Queue + " is paused"}
	}
	if n.Queue != "" {
		q, err := tx.QueueSettingsGet(n.Tenant, n.Queue) // cached
		if err != nil {
			return err
		}
		if q.MaxRunning > 0 && tx.QueueCount(n.Tenant, n.Queue, graph.StatusRunning) >= q.MaxRunning {
			return &fault.RateLimited{Reason: fmt.Sprintf("queue %s is at its max_running of %d", n.Queue, q.MaxRunning), RetryAfter: time.Second}
		}
	}
	if n.Target != "" && n.Target != by {
		return &fault.Conflict{Reason: "node is reserved for " + n.Target + " by handoff", Holder: n.Target}
	}
	return nil
}
