package lifecycle

import (
	"fmt"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/records"
)

// Op names a transition.
type Op string

// The transitions. Each is a function of this package of the same name.
const (
	OpCreate       Op = "create"         // (new) → open or queued
	OpClaim        Op = "claim"          // open, queued → running
	OpComplete     Op = "complete"       // running → done
	OpFail         Op = "fail"           // running → open/queued (retry), failed (final) or dead
	OpRelease      Op = "release"        // running → open or queued
	OpExpire       Op = "expire"         // running → open/queued, or dead without attempts left
	OpCancel       Op = "cancel"         // open, queued, running → cancelled
	OpFailForChild Op = "fail_for_child" // open, queued, running → failed
	OpRequeue      Op = "requeue"        // failed, dead, cancelled, expired → open or queued
	OpLapse        Op = "lapse"          // open, queued → expired (start_by passed unclaimed)
)

// Ops lists every transition.
func Ops() []Op {
	return []Op{OpCreate, OpClaim, OpComplete, OpFail, OpRelease, OpExpire, OpCancel, OpFailForChild, OpRequeue, OpLapse}
}

// Legal reports whether op may start from a node in status from ("" for a
// node not yet stored).
func Legal(op Op, from records.Status) bool {
	switch op {
	case OpCreate:
		return from == ""
	case OpClaim, OpLapse:
		return from.AtRest()
	case OpComplete, OpFail, OpRelease, OpExpire:
		return from == records.StatusRunning
	case OpCancel, OpFailForChild:
		return from.Valid() && !from.Terminal()
	case OpRequeue:
		return from == records.StatusFailed || from == records.StatusDead || from == records.StatusCancelled || from == records.StatusExpired
	}
	return false
}

// IllegalTransition is a transition asked of a node in a status it cannot
// start from. Refusal is the answer the API gives for that refusal (a
// *fault.NotClaimable, *fault.LeaseLost or *fault.Conflict, the same one
// the call sites gave before the transitions had one owner); Unwrap returns
// it, so the translation to HTTP finds it. A nil Refusal is a bug of ours
// (an internal error).
type IllegalTransition struct {
	Op      Op
	From    records.Status
	To      records.Status
	Refusal error
}

func (e *IllegalTransition) Error() string {
	from := string(e.From)
	if from == "" {
		from = "(new)"
	}
	msg := fmt.Sprintf("illegal transition %s from %s to %s", e.Op, from, e.To)
	if e.Refusal != nil {
		msg += ": " + e.Refusal.Error()
	}
	return msg
}

func (e *IllegalTransition) Unwrap() error { return e.Refusal }

// check returns nil when op may start from n's status, else the
// IllegalTransition that refuses it.
func check(op Op, n *records.Node, to records.Status) error {
	if Legal(op, n.Status) {
		return nil
	}
	return &IllegalTransition{Op: op, From: n.Status, To: to, Refusal: refusal(op, n)}
}

// refusal is the problem each refused transition has always answered with.
func refusal(op Op, n *records.Node) error {
	switch op {
	case OpClaim:
		return &fault.NotClaimable{Reason: fault.ReasonTerminal, Status: string(n.Status)}
	case OpComplete, OpFail, OpRelease, OpExpire:
		return &fault.LeaseLost{Reason: "no live lease on the node", Holder: ""}
	case OpCancel, OpFailForChild, OpLapse:
		return &fault.Conflict{Reason: fmt.Sprintf("node is already %s", n.Status)}
	case OpRequeue:
		return &fault.Conflict{Reason: fmt.Sprintf("only a failed, dead, cancelled or expired node can be requeued; this one is %s", n.Status)}
	}
	return nil
}
