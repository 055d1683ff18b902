package lifecycle

import (
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// Lapse ends a node that was not claimed by its start_by: status expired,
// with the node_expired event, and its parent told as for any other end
// without success (ChildEnded); its depends_on dependents stay blocked
// unless their edge says on_fail: ignore, as for dead. It returns the ids
// the parent's failure cancelled.
func Lapse(tx *graphstore.Tx, runs Runs, n *records.Node) ([]string, error) {
	if err := check(OpLapse, n, records.StatusExpired); err != nil {
		return nil, err
	}
	startBy := *n.StartBy
	from := n.Status
	n.Status = records.StatusExpired
	if err := tx.NodePut(n); err != nil {
		return nil, err
	}
	data := records.Data().Str("from", string(from)).Str("start_by", records.Stamp(startBy)).Done()
	if err := tx.EmitData(n.Tenant, records.EventNodeExpired, n.ID, SystemIdentity, data); err != nil {
		return nil, err
	}
	return ChildEnded(tx, runs, n, SystemIdentity)
}
