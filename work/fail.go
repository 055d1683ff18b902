package work

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tether-run/tether/fault"
	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/lease"
)

// FailParams end a run that did not succeed.
type FailParams struct {
	lease.HolderParams
	Error string
	// Requeue (the default) puts the node back in its queue while it has
	// attempts left; false ends it as failed.
	Requeue *bool
	// RetryIn delays the retry; nil takes the node's backoff.
	RetryIn *time.Duration
}

// MaxErrorLength bounds the error text kept on a node.
const MaxErrorLength = 64 << 10

// Fail ends the caller's run: back to queued (after RetryIn or the node's
// backoff) while attempts < max_attempts, else dead; failed when Requeue is
// false. A node that ends failed or dead fails its parent when the parent's
// on_child_fail is fail.
func (s *Service) Fail(ctx context.Context, p FailParams) (*graph.Node, error) {
	if p.Error == "" {
		return nil, fault.Invalidf("error", "is required")
	}
	if len(p.Error) > MaxErrorLength {
		return nil, fault.Invalidf("error", "must be at most %d bytes", MaxErrorLength)
	}
	if p.RetryIn != nil && *p.RetryIn < 0 {
		return nil, fault.Invalidf("retry_in_ms", "must not be negative")
	}
	var out *graph.Node
	err := s.store.Update(ctx, func(tx *graph.Tx) error {
		n, err := tx.NodeGet(p.Tenant, p.NodeID)
		if err != nil {
			return err
		}
		out, err = s.FailTx(tx, n, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error failing node: %w", err)
	}
	return out, nil
}

// FailTx is Fail inside an open transaction.
func (s *Service) FailTx(tx *graph.Tx, n *graph.Node, p FailParams) (*graph.Node, error) {
	if err := lease.CheckHolder(n, p.HolderParams, tx.Now()); err != nil {
		return nil, err
	}
	before := *n.Lease
	if err := s.leases.EndRun(tx, n, lease.OutcomeFailed, p.By); err != nil {
		return nil, err
	}
	msg := p.Error
	n.Error = &msg
	requeue := p.Requeue == nil || *p.Requeue
	data := map[string]any{"fence": before.Fence, "holder": before.By, "attempt": n.Attempts, "error": msg, "requeue": requeue}
	switch {
	case requeue && n.Attempts < n.MaxAttempts:
		n.Status = n.RestStatus()
		n.RunAt = nil
		if delay := retryDelay(n, p.RetryIn); delay > 0 {
			at := tx.Now().Add(delay).UTC()
			n.RunAt = &at
			data["run_at"] = graph.Stamp(at)
		}
	case requeue:
		n.Status = graph.StatusDead
	default:
		n.Status = graph.StatusFailed
	}
	if err := tx.NodePut(n); err != nil {
		return nil, err
	}
	if err := tx.Emit(n.Tenant, graph.EventFailed, n.ID, p.By, data); err != nil {
		return nil, err
	}
	if n.Status == graph.StatusDead {
		if err := tx.Emit(n.Tenant, graph.EventDead, n.ID, p.By, map[string]any{"attempts": n.Attempts}); err != nil {
			return nil, err
		}
	}
	if n.Status.Terminal() {
		if _, err := s.childEnded(tx, n, p.By); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// retryDelay is how long a failed run waits before it may run again: what
// the caller asked for, exactly, or else the node's backoff for its attempt
// with equal jitter (a uniform delay from half the backoff to all of it), so
// that the runs of many nodes failing together do not come back together.
func retryDelay(n *graph.Node, asked *time.Duration) time.Duration {
	if asked != nil {
		return *asked
	}
	d := backoffDelay(n)
	if d <= 1 {
		return d
	}
	// Whole milliseconds, the precision of run_at in the API.
	return (d/2 + rand.N(d-d/2+1)).Truncate(time.Millisecond)
}

// backoffDelay is the node's backoff for its attempt, before jitter.
func backoffDelay(n *graph.Node) time.Duration {
	b := n.Backoff
	if b == nil || b.InitialMS <= 0 {
		return 0
	}
	factor := b.Factor
	if factor < 1 {
		factor = 1
	}
	ms := float64(b.InitialMS) * math.Pow(factor, float64(max(0, n.Attempts-1)))
	if b.MaxMS > 0 && ms > float64(b.MaxMS) {
		ms = float64(b.MaxMS)
	}
	// The growth is capped before the conversion: a float beyond int64 has
	// no defined conversion.
	return duration.FromMS(int64(min(ms, float64(duration.MaxMS))))
}

// childEnded applies the parent's on_child_fail when child has ended failed,
// dead or cancelled: with "fail" the parent fails (its own lease ends) and
// its remaining children are cancelled; this repeats up the tree. It returns
// the ids it cancelled.
func (s *Service) childEnded(tx *graph.Tx, child *graph.Node, by string) ([]string, error) {
	if child.Parent == "" || child.Status == graph.StatusDone || !child.Status.Terminal() {
		return nil, nil
	}
	parent, err := tx.NodeGet(child.Tenant, child.Parent)
	if _, gone := err.(*fault.NotFound); gone {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if parent.Status.Terminal() || parent.OnChildFail != OnChildFailFail {
		return nil, nil
	}
	if err := s.leases.EndRun(tx, parent, lease.OutcomeFailed, by); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("child %s ended %s", child.ID, child.Status)
	parent.Error = &msg
	parent.Status = graph.StatusFailed
	if err := tx.NodePut(parent); err != nil {
		return nil, err
	}
	if err := tx.Emit(parent.Tenant, graph.EventFailed, parent.ID, by, map[string]any{
		"error": msg, "child": child.ID, "requeue": false,
	}); err != nil {
		return nil, err
	}
	siblings, err := tx.LiveEdges(parent.Tenant, parent.ID, graph.EdgeParentOf, graph.DirOut)
	if err != nil {
		return nil, err
	}
	var cancelled []string
	c := Caller{Tenant: parent.Tenant, Sub: by, Dispatcher: true}
	for _, e := range siblings {
		sib, err := tx.NodeGet(parent.Tenant, e.To)
		if err != nil {
			return nil, err
		}
		if sib.Status.Terminal() {
			continue
		}
		ids, err := s.cancelTx(tx, c, sib, "parent "+parent.ID+" failed")
		if err != nil {
			return nil, err
		}
		cancelled = append(cancelled, ids...)
	}
	up, err := s.childEnded(tx, parent, by)
	return append(cancelled, up...), err
}

// AfterEnd is the lease.Hooks.AfterEnd of this package: a run that expired
// into dead counts as a failed child.
func (s *Service) AfterEnd(tx *graph.Tx, n *graph.Node, by string) error {
	_, err := s.childEnded(tx, n, by)
	return err
}
