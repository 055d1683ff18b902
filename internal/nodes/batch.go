package nodes

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/lease"
)

// MaxBatchOps is the most ops one Batch may hold.
const MaxBatchOps = 1000

// BatchParallelism bounds how many ops of one batch are in flight at once.
const BatchParallelism = 64

// BatchResult is one op's answer in a batch: what its call returned, or
// its error.
type BatchResult struct {
	Kind   BatchKind
	NodeID string
	// Err is the op's error, nil when it succeeded: a fault error for what
	// its call refuses (a lost lease, a node not found, an invalid value),
	// or an error of no known kind, a panic included, for an internal one.
	Err error
	// Node is the node as the op left it, for every kind but extend; its
	// Readiness is filled in for the kinds answered with a node view
	// (complete, fail, progress).
	Node NodeView
	// Lease is the lease after a renew, extend or progress.
	Lease *graph.Lease
	// Capped is set when an extend was capped to the tenant's maximum TTL,
	// TTLMax.
	Capped bool
	TTLMax time.Duration
}

// Batch runs many lease and lifecycle ops as c, and answers each on its
// own, in the order given: results[i] is ops[i]'s answer, exactly what its
// call alone would have answered, and one op's error fails nothing else.
// Ops on the same node run in the order given.
//
// A batch of completes only (what a worker sends for the jobs it
// finished) runs many per transaction through CompleteMany; any other runs
// one goroutine per node, at most BatchParallelism at once, so that ops on
// different nodes share fsyncs through the store's group commit. An op that
// panics is that op's internal error; the others run on.
//
// Batch returns once every op's write is durable, with one wait for the log
// instead of one per op (graph.WithBarrier): no result is answered before
// its write could be read. Its error is that wait's, or a batch of more
// than MaxBatchOps; then no result may be reported.
func (s *Service) Batch(ctx context.Context, c Caller, ops []BatchOp) ([]BatchResult, error) {
	if len(ops) > MaxBatchOps {
		return nil, fault.Invalidf("ops", "must hold at most %d ops", MaxBatchOps)
	}
	ctx, durable := graph.WithBarrier(ctx)
	var results []BatchResult
	if allComplete(ops) {
		results = s.batchCompletes(ctx, c, ops)
	} else {
		results = s.batchPerNode(ctx, c, ops)
	}
	if err := durable.Wait(); err != nil {
		return nil, fmt.Errorf("error making a batch durable: %w", err)
	}
	return results, nil
}

// allComplete reports whether every op is a complete.
func allComplete(ops []BatchOp) bool {
	for _, o := range ops {
		if o.kind != BatchComplete {
			return false
		}
	}
	return true
}

// batchPerNode runs ops with one goroutine per node (perNode).
func (s *Service) batchPerNode(ctx context.Context, c Caller, ops []BatchOp) []BatchResult {
	results := make([]BatchResult, len(ops))
	perNode(ops, BatchParallelism, func(i int) {
		results[i] = s.batchOp(ctx, c, ops[i])
	})
	return results
}

// perNode calls run(i) for every op: ops on different nodes concurrently,
// at most limit at once, and the ops of one node one after another in the
// order given. It returns once every run has.
func perNode(ops []BatchOp, limit int, run func(i int)) {
	byNode := make(map[string][]int, len(ops))
	order := make([]string, 0, len(ops))
	for i, o := range ops {
		id := o.NodeID()
		if _, ok := byNode[id]; !ok {
			order = append(order, id)
		}
		byNode[id] = append(byNode[id], i)
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for _, id := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func(idx []int) {
			defer wg.Done()
			defer func() { <-sem }()
			for _, i := range idx {
				run(i)
			}
		}(byNode[id])
	}
	wg.Wait()
}

// batchOp runs one op as c. It runs on a goroutine of its own, where a
// panic would end the process: a panic is the op's error instead.
func (s *Service) batchOp(ctx context.Context, c Caller, o BatchOp) (r BatchResult) {
	defer recoverOp(&r)
	r.Kind, r.NodeID = o.kind, o.NodeID()
	var err error
	switch o.kind {
	case BatchRenew:
		var res *lease.RenewResult
		if res, err = s.leases.Renew(ctx, o.as(c)); err == nil {
			r.Node.Node, r.Lease = res.Node, res.Lease
		}
	case BatchExtend:
		var res *lease.ExtendResult
		if res, err = s.leases.Extend(ctx, o.as(c), o.by); err == nil {
			r.Lease, r.Capped, r.TTLMax = res.Lease, res.Capped, res.TTLMax
		}
	case BatchRelease:
		r.Node.Node, err = s.leases.Release(ctx, o.releaseParams(c))
	case BatchComplete:
		var n *graph.Node
		if n, err = s.Complete(ctx, o.completeParams(c)); err == nil {
			r.Node, err = s.view(n)
		}
	case BatchFail:
		var n *graph.Node
		if n, err = s.Fail(ctx, o.failParams(c)); err == nil {
			r.Node, err = s.view(n)
		}
	case BatchProgress:
		var res *ProgressResult
		if res, err = s.Progress(ctx, o.progressParams(c)); err == nil {
			r.Lease = res.Lease
			r.Node, err = s.view(res.Node)
		}
	default:
		panic(fmt.Sprintf("nodes: a batch op of no kind (%d): BatchOps are made by their constructors", o.kind))
	}
	if err != nil {
		return BatchResult{Kind: r.Kind, NodeID: r.NodeID, Err: err}
	}
	return r
}

// batchCompletes runs a batch of completes through CompleteMany, many per
// transaction, in the order given (which keeps the order per node too).
func (s *Service) batchCompletes(ctx context.Context, c Caller, ops []BatchOp) []BatchResult {
	params := make([]CompleteParams, len(ops))
	for i, o := range ops {
		params[i] = o.completeParams(c)
	}
	done, errs := s.CompleteMany(ctx, params)
	results := make([]BatchResult, len(ops))
	for i, o := range ops {
		if errs[i] != nil {
			results[i] = BatchResult{Kind: BatchComplete, NodeID: o.NodeID(), Err: errs[i]}
			continue
		}
		results[i] = s.completedView(o, done[i])
	}
	return results
}

// completedView is the answer of a complete that succeeded: its node's
// view, recovered as batchOp is, so a panic is this op's error alone.
func (s *Service) completedView(o BatchOp, n *graph.Node) (r BatchResult) {
	defer recoverOp(&r)
	r.Kind, r.NodeID = BatchComplete, o.NodeID()
	v, err := s.view(n)
	if err != nil {
		return BatchResult{Kind: r.Kind, NodeID: r.NodeID, Err: err}
	}
	r.Node = v
	return r
}

// recoverOp, deferred, turns a panic into r's error and drops the rest of
// what r answered.
func recoverOp(r *BatchResult) {
	if v := recover(); v != nil {
		*r = BatchResult{Kind: r.Kind, NodeID: r.NodeID, Err: fmt.Errorf("panic in a batch op: %v", v)}
	}
}

// view is the view of n, just written.
func (s *Service) view(n *graph.Node) (NodeView, error) {
	views, err := s.Views(n)
	if err != nil {
		return NodeView{}, err
	}
	return views[0], nil
}
