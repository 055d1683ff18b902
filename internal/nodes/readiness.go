package nodes

import (
	"time"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// Readiness says whether a node at rest may run now and, if not, why.
type Readiness struct {
	Ready     bool
	BlockedBy []string   // unfinished dependencies and children
	RunAt     *time.Time // set while run_at is in the future
	Paused    bool       // its queue is paused
}

// ReadinessTx explains n's readiness at tx's instant under the claimable
// rule (lifecycle.Claimable, graphstore.Tx.ClaimRefusals): open or queued, run_at
// passed, every depends_on target done (or ended, with on_fail: ignore),
// every child terminal, and its queue not paused; BlockedBy names what
// blocks it. An identity node is never ready: it stands for a caller, it is
// not work. A queue at its max_running and a handoff target concern who
// claims and when, not the node's readiness.
func ReadinessTx(tx *graphstore.Tx, n *records.Node) (Readiness, error) {
	r := Readiness{BlockedBy: []string{}}
	if !n.Status.AtRest() || n.Type == graphstore.IdentityType {
		return r, nil
	}
	refused, _, err := tx.ClaimRefusals(n, "")
	if err != nil {
		return r, err
	}
	if refused&graphstore.RefusedDelayed != 0 {
		r.RunAt = n.RunAt
	}
	if refused&graphstore.RefusedBlocked != 0 {
		if r.BlockedBy, err = lifecycle.Blocking(tx, n); err != nil {
			return r, err
		}
	}
	r.Paused = refused&graphstore.RefusedPaused != 0
	r.Ready = r.RunAt == nil && len(r.BlockedBy) == 0 && !r.Paused
	return r, nil
}
