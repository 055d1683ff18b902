package lifecycle

import (
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// Expire settles a run that ended on its own (its lease expired, or the run
// timed out when timedOut): the run ends (outcome expired) and the node goes
// back at rest, or to dead when it has used all its attempts; a node that
// goes dead counts as a failed child (ChildEnded). It reports whether the
// node went dead.
func Expire(tx *graphstore.Tx, runs Runs, n *records.Node, timedOut bool) (dead bool, err error) {
	dead = n.Attempts >= n.MaxAttempts
	to := n.RestStatus()
	if dead {
		to = records.StatusDead
	}
	if err := check(OpExpire, n, to); err != nil {
		return false, err
	}
	before := *n.Lease
	if err := runs.EndRun(tx, n, OutcomeExpired, SystemIdentity); err != nil {
		return false, err
	}
	data := records.Data().Uint("fence", before.Fence).Str("holder", before.By).Int("attempt", n.Attempts)
	if timedOut {
		msg := "timeout"
		n.Error = &msg
		data = data.Str("error", msg)
	}
	n.Status = to
	if err := tx.NodePut(n); err != nil {
		return false, err
	}
	if err := tx.EmitData(n.Tenant, records.EventExpired, n.ID, SystemIdentity, data.Done()); err != nil {
		return false, err
	}
	if !dead {
		return false, nil
	}
	if err := tx.EmitData(n.Tenant, records.EventDead, n.ID, SystemIdentity, records.Data().Int("attempts", n.Attempts).Done()); err != nil {
		return true, err
	}
	_, err = ChildEnded(tx, runs, n, SystemIdentity)
	return true, err
}
