package lifecycle

import (
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// CancelTree cancels root and every non-terminal descendant (parent_of) and
// dependent (depends_on with on_fail other than ignore) of it, in one
// transaction, each through Cancel. Terminal nodes and identity nodes are
// passed over (the cascade still goes through them). It returns the ids it
// cancelled, in the order it reached them.
func CancelTree(tx *graphstore.Tx, runs Runs, root *records.Node, by, reason string) ([]string, error) {
	tenant := root.Tenant
	cancelled := []string{}
	seen := map[string]bool{root.ID: true}
	queue := []string{root.ID}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		// Load at the moment of processing: cancelling an earlier node may
		// already have changed this one (a parent failing cancels its children).
		n, err := tx.NodeGet(tenant, id)
		if err != nil {
			return nil, err
		}
		if !n.Status.Terminal() && !graphstore.IsIdentityID(n.ID) {
			more, err := Cancel(tx, runs, n, by, root.ID, reason)
			if err != nil {
				return nil, err
			}
			cancelled = append(cancelled, n.ID)
			// A parent that failed because of this cancel cancelled its
			// other children already; they are part of the answer too.
			for _, id := range more {
				if !seen[id] {
					seen[id] = true
					cancelled = append(cancelled, id)
				}
			}
		}
		next, err := cascadeTargets(tx, n)
		if err != nil {
			return nil, err
		}
		for _, nid := range next {
			if !seen[nid] {
				seen[nid] = true
				queue = append(queue, nid)
			}
		}
	}
	return cancelled, nil
}

// cascadeTargets are the nodes a cancel of n reaches: its children and the
// dependents that asked to be cancelled with it.
func cascadeTargets(tx *graphstore.Tx, n *records.Node) ([]string, error) {
	var out []string
	children, err := tx.LiveEdges(n.Tenant, n.ID, graphstore.EdgeParentOf, graphstore.DirOut)
	if err != nil {
		return nil, err
	}
	for _, e := range children {
		out = append(out, e.To)
	}
	dependents, err := tx.LiveEdges(n.Tenant, n.ID, graphstore.EdgeDependsOn, graphstore.DirIn)
	if err != nil {
		return nil, err
	}
	for _, e := range dependents {
		if e.Props["on_fail"] != graphstore.OnFailIgnore {
			out = append(out, e.From)
		}
	}
	return out, nil
}

// Cancel cancels one node that has not ended: its run ends (outcome
// cancelled), with the cancelled event naming the root of the cancel; its
// parent fails when it asked to (ChildEnded). It returns the ids that
// parent failure cancelled.
func Cancel(tx *graphstore.Tx, runs Runs, n *records.Node, by, root, reason string) ([]string, error) {
	if err := check(OpCancel, n, records.StatusCancelled); err != nil {
		return nil, err
	}
	if err := runs.EndRun(tx, n, OutcomeCancelled, by); err != nil {
		return nil, err
	}
	n.Status = records.StatusCancelled
	if err := tx.NodePut(n); err != nil {
		return nil, err
	}
	data := map[string]any{"root": root}
	if reason != "" {
		data["reason"] = reason
	}
	if err := tx.Emit(n.Tenant, records.EventCancelled, n.ID, by, data); err != nil {
		return nil, err
	}
	return ChildEnded(tx, runs, n, by)
}
