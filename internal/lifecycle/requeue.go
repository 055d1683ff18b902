package lifecycle

import (
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// Requeue puts a failed, dead, cancelled or expired node back at rest
// (queued, or open without a queue) with attempts = 0, a clear error, no
// delay and no start_by (it bounded the first wait only), with the requeued
// event.
func Requeue(tx *graphstore.Tx, n *records.Node, by, reason string) error {
	if err := check(OpRequeue, n, n.RestStatus()); err != nil {
		return err
	}
	from := n.Status
	n.Status = n.RestStatus()
	n.Attempts = 0
	n.Error = nil
	n.RunAt = nil
	n.StartBy = nil
	if err := tx.NodePut(n); err != nil {
		return err
	}
	data := map[string]any{"from": from, "status": n.Status}
	if reason != "" {
		data["reason"] = reason
	}
	return tx.Emit(n.Tenant, records.EventRequeued, n.ID, by, data)
}
