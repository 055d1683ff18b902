package sim

import (
	"context"
	"errors"
	"fmt"
	"testing/synctest"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

// maxNodes bounds the nodes a run creates.
const maxNodes = 40

// workers are the identities that claim.
var workers = [...]string{"w0", "w1", "w2"}

// errInjected is the write failure the disk is told to return.
var errInjected = errors.New("injected write failure")

// take runs one step the seed chooses.
func (r *runner) take() error {
	switch k := r.rng.IntN(100); {
	case k < 4:
		return r.crash()
	case k < 7:
		return r.failWrite()
	case k < 10:
		r.res.Restarts++
		r.logf("restart")
		return r.restart()
	case k < 15:
		d := r.syncDelay()
		r.w.disk.SetSyncDelay(d)
		r.logf("sync delay %v", d)
		return nil
	default:
		op := r.pick()
		return r.apply(op, op.run(r.w))
	}
}

// syncDelay is a sync's delay from now on: none half the time. Delays are
// odd microseconds, so they seldom end on the instant a lease does.
func (r *runner) syncDelay() time.Duration {
	if r.rng.IntN(2) == 0 {
		return 0
	}
	return time.Duration(1+2*r.rng.IntN(25_000)) * time.Microsecond
}

// restart closes the layers and opens them again on what the disk holds.
func (r *runner) restart() error {
	r.w.close()
	return r.w.open(reaperEvery)
}

// failWrite fails the next write: the operation of this step, or the
// reaper's if it writes first. The store breaks, and is restarted.
func (r *runner) failWrite() error {
	r.res.Failures++
	r.w.disk.FailNext(errInjected)
	op := r.pick()
	r.logf("fail the next write")
	if err := r.apply(op, op.run(r.w)); err != nil {
		return err
	}
	synctest.Wait()
	r.w.disk.FailNext(nil) // not armed past this step: the operation may have written nothing
	return r.restart()
}

// crash cuts the power, half the time with an operation mid-sync: the
// disk keeps a random prefix of the group it was syncing. The operation's
// answer (an eager renewal's comes before its sync) counts as the client
// heard it.
func (r *runner) crash() error {
	r.res.Crashes++
	var answered chan error
	var op *operation
	if r.rng.IntN(2) == 0 {
		delay := r.syncDelay()
		if delay == 0 {
			delay = time.Duration(1+2*r.rng.IntN(25_000)) * time.Microsecond
		}
		r.w.disk.SetSyncDelay(delay)
		op = r.pick()
		answered = make(chan error, 1)
		w := r.w
		go func() { answered <- op.run(w) }()
		time.Sleep(time.Duration(r.rng.Int64N(int64(delay))))
		synctest.Wait()
	}
	inflight, kept := r.w.disk.Crash(func(n int) int { return r.rng.IntN(n + 1) })
	if kept > 0 {
		r.res.Torn++
	}
	r.logf("crash: %d segments in flight, %d kept", inflight, kept)
	r.w.close()
	if answered != nil {
		if err := r.apply(op, <-answered); err != nil {
			return err
		}
	}
	return r.w.open(reaperEvery)
}

// operation is one call of a client into the system.
type operation struct {
	kind   string // create, claim, renew, release, complete
	node   *nodeModel
	worker string
	ttl    time.Duration
	fence  uint64
	at     time.Time // when it was called
	// claimed is the claim's answer (nil unless kind is claim or renew)
	claimed *records.Lease
	renewed bool
}

func (op *operation) String() string {
	return fmt.Sprintf("%s %s by %s fence %d ttl %v", op.kind, op.node.id, op.worker, op.fence, op.ttl)
}

// pick chooses the next operation: now and then a create, else a claim
// of a node not known done, or a renewal, release or completion, mostly
// by a holder the model knows live, now and then by anyone (a stale or
// wrong caller the system must refuse).
func (r *runner) pick() *operation {
	if len(r.m.ids) == 0 || len(r.m.ids) < maxNodes && r.rng.IntN(6) == 0 {
		id := fmt.Sprintf("n%02d", len(r.m.ids))
		n := &nodeModel{id: id, maxAttempts: 1 + r.rng.Int64N(4)}
		r.m.nodes[id] = n
		r.m.ids = append(r.m.ids, id)
		return &operation{kind: "create", node: n, worker: "head"}
	}
	now := time.Now()
	var held, open []*nodeModel
	for _, id := range r.m.ids {
		n := r.m.nodes[id]
		if n.live(now) != nil {
			held = append(held, n)
		} else if !n.done {
			open = append(open, n)
		}
	}
	op := &operation{worker: workers[r.rng.IntN(len(workers))]}
	switch k := r.rng.IntN(20); {
	case k < 7:
		op.kind = "claim"
		op.ttl = []time.Duration{0, 5 * time.Second, 10 * time.Second, 45 * time.Second, 5 * time.Minute}[r.rng.IntN(5)]
	case k < 13:
		op.kind = "renew"
	case k < 15:
		op.kind = "release"
	default:
		op.kind = "complete"
	}
	switch {
	case op.kind == "claim" && len(open) > 0 && r.rng.IntN(5) != 0:
		op.node = open[r.rng.IntN(len(open))]
	case op.kind != "claim" && len(held) > 0 && r.rng.IntN(6) != 0:
		op.node = held[r.rng.IntN(len(held))]
		op.worker, op.fence = op.node.lease.holder, op.node.lease.fence
	default:
		op.node = r.m.nodes[r.m.ids[r.rng.IntN(len(r.m.ids))]]
		if op.node.lease != nil && r.rng.IntN(2) == 0 {
			op.fence = op.node.lease.fence // maybe stale, maybe another's
		}
	}
	return op
}

// run calls the system; its answer is the error (nil: acknowledged).
func (op *operation) run(w *world) error {
	op.at = time.Now()
	ctx := context.Background()
	holder := leasing.HolderParams{Tenant: tenant, NodeID: op.node.id, By: op.worker, Fence: op.fence}
	switch op.kind {
	case "create":
		q, id := "q", op.node.id
		max := op.node.maxAttempts
		_, err := w.nodes.Create(ctx, nodes.Caller{Tenant: tenant, Sub: op.worker, Dispatcher: true},
			nodes.NodeSpec{ID: &id, Type: "task", Queue: &q, MaxAttempts: &max}, nil)
		return err
	case "claim":
		res, err := w.leases.Claim(ctx, leasing.ClaimParams{Tenant: tenant, NodeID: op.node.id, By: op.worker, TTL: op.ttl})
		if err == nil {
			op.claimed, op.renewed = res.Lease, res.Renewed
		}
		return err
	case "renew":
		res, err := w.leases.Renew(ctx, holder)
		if err == nil {
			op.claimed, op.renewed = res.Lease, true
		}
		return err
	case "release":
		_, err := w.leases.Release(ctx, leasing.ReleaseParams{HolderParams: holder})
		return err
	case "complete":
		_, err := w.nodes.Complete(ctx, nodes.CompleteParams{HolderParams: holder})
		return err
	}
	return fmt.Errorf("unknown operation %q", op.kind)
}

// unanswered reports whether err leaves the outcome unknown (the store was
// unavailable: the write may or may not have survived); any other error
// is a refusal, which changed nothing.
func unanswered(err error) bool {
	return errors.Is(err, fault.ErrUnavailable) || errors.Is(err, context.Canceled)
}
