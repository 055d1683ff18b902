package lifecycle

import (
	"encoding/json"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// CompleteParams are what a successful run hands back.
type CompleteParams struct {
	By     string
	Result json.RawMessage
	Usage  map[string]float64
}

// Complete ends a running node's run as done: the run ends (outcome done),
// the result is kept, the error and handoff target cleared, the run's usage
// added to the node and rolled up its parent chain, with the completed event.
// The caller has checked that p.By may act on the lease.
func Complete(tx *graphstore.Tx, runs Runs, n *records.Node, p CompleteParams) error {
	if err := check(OpComplete, n, records.StatusDone); err != nil {
		return err
	}
	before := *n.Lease
	if err := runs.EndRun(tx, n, OutcomeDone, p.By); err != nil {
		return err
	}
	n.Status = records.StatusDone
	n.Result = p.Result
	n.Error = nil
	n.Target = ""
	AddUsage(n, p.Usage)
	if err := tx.FlowSpend(n, p.Usage); err != nil {
		return err
	}
	if err := tx.NodePut(n); err != nil {
		return err
	}
	if err := tx.EmitData(n.Tenant, records.EventCompleted, n.ID, p.By, records.Data().
		Uint("fence", before.Fence).Str("holder", before.By).Int("attempt", n.Attempts).
		Done()); err != nil {
		return err
	}
	return RollUp(tx, n, p.Usage)
}
