package graphstore

import (
	"github.com/tether-run/tether/internal/records"

	"github.com/tether-run/tether/internal/indexes"
)

// Readiness bookkeeping. A node's blockers are its unmet depends_on targets
// and its unfinished children; their counts live in its in-memory state
// (indexes.NodeState), so a dependency finishing never rewrites its dependents'
// records. A queued node with no blocker is in the ready mirror, which
// Tx.apply keeps in step; the claimable rule reads the same counts
// (claimable.go).

// OnFailIgnore is the depends_on prop value under which a dependency that
// ended without success still counts as satisfied.
const OnFailIgnore = "ignore"

// DependencySatisfied reports whether a depends_on edge e to a node in status
// st no longer blocks: the target is done, or ended with on_fail: ignore.
func DependencySatisfied(st records.Status, e *records.Edge) bool {
	return st == records.StatusDone || (st.Terminal() && e.Props["on_fail"] == OnFailIgnore)
}

// addBlockers moves the counts of id by the deltas.
func (tx *Tx) addBlockers(tenant, id string, dDeps, dChildren int64) {
	st := tx.mut(indexes.NodeRef{Tenant: tenant, ID: id})
	if st == nil {
		return
	}
	st.Deps, st.Children = int32(max(0, int64(st.Deps)+dDeps)), int32(max(0, int64(st.Children)+dChildren))
}

// propagateStatus adjusts the blockers of n's dependents and parent when n's
// status change satisfies or unsatisfies them.
func (tx *Tx) propagateStatus(was records.Status, n *records.Node) error {
	if was == n.Status {
		return nil
	}
	// Most nodes have no dependents: the counter spares the edge walk.
	if st := tx.state(indexes.NodeRef{Tenant: n.Tenant, ID: n.ID}); st != nil && st.Dependents > 0 {
		for _, le := range tx.liveEdges(n.Tenant, n.ID, EdgeDependsOn, DirIn) {
			before, after := DependencySatisfied(was, le.Edge), DependencySatisfied(n.Status, le.Edge)
			if before == after {
				continue
			}
			delta := int64(1)
			if after {
				delta = -1
			}
			tx.addBlockers(n.Tenant, le.Edge.From, delta, 0)
		}
	}
	if n.Parent != "" && was.Terminal() != n.Status.Terminal() {
		delta := int64(1)
		if n.Status.Terminal() {
			delta = -1
		}
		tx.addBlockers(n.Tenant, n.Parent, 0, delta)
	}
	return nil
}

// edgeBlocks reports whether the live edge e blocks its from-node, and how
// (as blocker deltas), given the current status of its to-node.
func (tx *Tx) edgeBlocks(tenant string, e *records.Edge) (dDeps, dChildren int64) {
	if e.Type != EdgeDependsOn && e.Type != EdgeParentOf {
		return 0, 0
	}
	to := tx.state(indexes.NodeRef{Tenant: tenant, ID: e.To})
	if to == nil {
		return 0, 0
	}
	switch {
	case e.Type == EdgeDependsOn && !DependencySatisfied(to.Status.Status(), e):
		return 1, 0
	case e.Type == EdgeParentOf && !to.Status.Terminal():
		return 0, 1
	}
	return 0, 0
}

// countBlocks counts, at rebuild, what the live edge e blocks on its two
// ends: an unmet depends_on target and an unfinished child.
func countBlocks(e *records.Edge, from, to *indexes.NodeState) {
	switch {
	case e.Type == EdgeDependsOn:
		to.Dependents++
		if !DependencySatisfied(to.Status.Status(), e) {
			from.Deps++
		}
	case e.Type == EdgeParentOf && !to.Status.Terminal():
		from.Children++
	}
}
