package work

import (
	"context"
	"fmt"

	"github.com/tether-run/tether/fault"
	"github.com/tether-run/tether/graph"
)

// Requeue puts a failed, dead or cancelled node back at rest (queued, or open
// without a queue) with attempts = 0, a clear error and no delay.
func (s *Service) Requeue(ctx context.Context, c Caller, id, reason string) (*graph.Node, error) {
	var out *graph.Node
	err := s.store.Update(ctx, func(tx *graph.Tx) error {
		n, err := tx.NodeGet(c.Tenant, id)
		if err != nil {
			return err
		}
		switch n.Status {
		case graph.StatusFailed, graph.StatusDead, graph.StatusCancelled:
		default:
			return &fault.Conflict{Reason: fmt.Sprintf("only a failed, dead or cancelled node can be requeued; this one is %s", n.Status)}
		}
		from := n.Status
		n.Status = n.RestStatus()
		n.Attempts = 0
		n.Error = nil
		n.RunAt = nil
		if err := tx.NodePut(n); err != nil {
			return err
		}
		data := map[string]any{"from": from, "status": n.Status}
		if reason != "" {
			data["reason"] = reason
		}
		out = n
		return tx.Emit(c.Tenant, graph.EventRequeued, n.ID, c.Sub, data)
	})
	if err != nil {
		return nil, fmt.Errorf("error requeueing node: %w", err)
	}
	return out, nil
}
