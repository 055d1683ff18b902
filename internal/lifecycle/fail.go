package lifecycle

import (
	"time"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// FailParams end a run that did not succeed.
type FailParams struct {
	By    string
	Error string
	// Requeue puts the node back at rest while it has attempts left;
	// false ends it as failed.
	Requeue bool
	// RetryIn delays the retry; nil takes the node's backoff.
	RetryIn *time.Duration
}

// FailOutcome is where a failed run leaves its node.
type FailOutcome int

const (
	FailRetry FailOutcome = iota // back at rest, after a delay
	FailFinal                    // failed: asked not to requeue
	FailDead                     // dead: out of attempts
)

// FailOutcomeOf is where a failed run of n would leave it.
func FailOutcomeOf(n *records.Node, requeue bool) FailOutcome {
	switch {
	case requeue && n.Attempts < n.MaxAttempts:
		return FailRetry
	case requeue:
		return FailDead
	}
	return FailFinal
}

// Status is the status the outcome leaves n in.
func (o FailOutcome) Status(n *records.Node) records.Status {
	switch o {
	case FailRetry:
		return n.RestStatus()
	case FailDead:
		return records.StatusDead
	}
	return records.StatusFailed
}

// Fail ends a running node's run (outcome failed) with p.Error: back at rest
// (after RetryIn or the node's backoff) while attempts < max_attempts, else
// dead; failed when p.Requeue is false. A node that ends failed or dead fails
// its parent when the parent's on_child_fail is fail (ChildEnded). The caller
// has checked that p.By may act on the lease.
func Fail(tx *graphstore.Tx, runs Runs, n *records.Node, p FailParams) error {
	outcome := FailOutcomeOf(n, p.Requeue)
	if err := check(OpFail, n, outcome.Status(n)); err != nil {
		return err
	}
	before := *n.Lease
	if err := runs.EndRun(tx, n, OutcomeFailed, p.By); err != nil {
		return err
	}
	msg := p.Error
	n.Error = &msg
	data := map[string]any{"fence": before.Fence, "holder": before.By, "attempt": n.Attempts, "error": msg, "requeue": p.Requeue}
	n.Status = outcome.Status(n)
	if outcome == FailRetry {
		n.RunAt = nil
		if delay := retryDelay(n, p.RetryIn); delay > 0 {
			at := tx.Now().Add(delay).UTC()
			n.RunAt = &at
			data["run_at"] = records.Stamp(at)
		}
	}
	if err := tx.NodePut(n); err != nil {
		return err
	}
	if err := tx.Emit(n.Tenant, records.EventFailed, n.ID, p.By, data); err != nil {
		return err
	}
	if n.Status == records.StatusDead {
		if err := tx.Emit(n.Tenant, records.EventDead, n.ID, p.By, map[string]any{"attempts": n.Attempts}); err != nil {
			return err
		}
	}
	if n.Status.Terminal() {
		if _, err := ChildEnded(tx, runs, n, p.By); err != nil {
			return err
		}
	}
	return nil
}
