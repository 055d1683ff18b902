package work

import (
	"context"
	"fmt"

	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/lease"
)

// Cancel cancels the node and, atomically with it, every non-terminal
// descendant (parent_of) and dependent (depends_on with on_fail: cancel).
// Their live leases end (outcome cancelled), so holders get lease_lost.
// It returns the ids it cancelled, in the order it reached them.
func (s *Service) Cancel(ctx context.Context, c Caller, id, reason string) ([]string, error) {
	var cancelled []string
	err := s.store.Update(ctx, func(tx *graph.Tx) error {
		root, err := tx.NodeGet(c.Tenant, id)
		if err != nil {
			return err
		}
		cancelled, err = s.cancelTx(tx, c, root, reason)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error cancelling node: %w", err)
	}
	return cancelled, nil
}

func (s *Service) cancelTx(tx *graph.Tx, c Caller, root *graph.Node, reason string) ([]string, error) {
	cancelled := []string{}
	seen := map[string]bool{root.ID: true}
	queue := []string{root.ID}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		// Load at the moment of processing: cancelling an earlier node may
		// already have changed this one (a parent failing cancels its children).
		n, err := tx.NodeGet(c.Tenant, id)
		if err != nil {
			return nil, err
		}
		if !n.Status.Terminal() && !graph.IsIdentityID(n.ID) {
			more, err := s.cancelOne(tx, c, n, root.ID, reason)
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
func cascadeTargets(tx *graph.Tx, n *graph.Node) ([]string, error) {
	var out []string
	children, err := tx.LiveEdges(n.Tenant, n.ID, graph.EdgeParentOf, graph.DirOut)
	if err != nil {
		return nil, err
	}
	for _, e := range children {
		out = append(out, e.To)
	}
	dependents, err := tx.LiveEdges(n.Tenant, n.ID, graph.EdgeDependsOn, graph.DirIn)
	if err != nil {
		return nil, err
	}
	for _, e := range dependents {
		if e.Props["on_fail"] != OnFailIgnore {
			out = append(out, e.From)
		}
	}
	return out, nil
}

func (s *Service) cancelOne(tx *graph.Tx, c Caller, n *graph.Node, root, reason string) ([]string, error) {
	if err := s.leases.EndRun(tx, n, lease.OutcomeCancelled, c.Sub); err != nil {
		return nil, err
	}
	n.Status = graph.StatusCancelled
	if err := tx.NodePut(n); err != nil {
		return nil, err
	}
	data := map[string]any{"root": root}
	if reason != "" {
		data["reason"] = reason
	}
	if err := tx.Emit(n.Tenant, graph.EventCancelled, n.ID, c.Sub, data); err != nil {
		return nil, err
	}
	return s.childEnded(tx, n, c.Sub)
}
