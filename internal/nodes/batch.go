package nodes

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
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
	Lease *records.Lease
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
// instead of one per op (graphstore.WithBarrier): no result is answered before
// its write could be read. Its error is that wait's, or a batch of more
// than MaxBatchOps; then no result may be reported.
func (s *Service) Batch(ctx context.Context, c Caller, ops []BatchOp) ([]BatchResult, error) {
	if len(ops) > MaxBatchOps {
		return nil, fault.Invalidf("ops", "must hold at most %d ops", MaxBatchOps)
	}
	ctx, durable := graphstore.WithBarrier(ctx)
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
		s.batchOp(ctx, c, &ops[i], &results[i])
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

// batchOp runs one op as c into r. It runs on a goroutine of its own, where
// a panic would end the process: a panic is the op's error instead. Each
// kind runs in a function of its own, so that the goroutine's stack holds
// only that kind's frame: one frame for every kind's params and results, at
// the bottom of each fresh goroutine, made the stack grow, and be copied,
// on every op.
func (s *Service) batchOp(ctx context.Context, c Caller, o *BatchOp, r *BatchResult) {
	r.Kind, r.NodeID = o.kind, o.NodeID()
	defer recoverOp(r)
	var err error
	switch o.kind {
	case BatchRenew:
		err = s.batchRenew(ctx, c, o, r)
	case BatchExtend:
		err = s.batchExtend(ctx, c, o, r)
	case BatchRelease:
		err = s.batchRelease(ctx, c, o, r)
	case BatchComplete:
		err = s.batchComplete(ctx, c, o, r)
	case BatchFail:
		err = s.batchFail(ctx, c, o, r)
	case BatchProgress:
		err = s.batchProgress(ctx, c, o, r)
	default:
		panicNoKind(o.kind)
	}
	// A kind's function writes r only once it succeeded.
	r.Err = err
}

func panicNoKind(k BatchKind) {
	panic(fmt.Sprintf("nodes: a batch op of no kind (%d): BatchOps are made by their constructors", k))
}

func (s *Service) batchRenew(ctx context.Context, c Caller, o *BatchOp, r *BatchResult) error {
	res, err := s.leases.Renew(ctx, o.as(c))
	if err != nil {
		return err
	}
	r.Node.Node, r.Lease = res.Node, res.Lease
	return nil
}

func (s *Service) batchExtend(ctx context.Context, c Caller, o *BatchOp, r *BatchResult) error {
	res, err := s.leases.Extend(ctx, o.as(c), o.by)
	if err != nil {
		return err
	}
	r.Lease, r.Capped, r.TTLMax = res.Lease, res.Capped, res.TTLMax
	return nil
}

func (s *Service) batchRelease(ctx context.Context, c Caller, o *BatchOp, r *BatchResult) error {
	n, err := s.leases.Release(ctx, o.releaseParams(c))
	if err != nil {
		return err
	}
	r.Node.Node = n
	return nil
}

func (s *Service) batchComplete(ctx context.Context, c Caller, o *BatchOp, r *BatchResult) error {
	n, err := s.Complete(ctx, o.completeParams(c))
	if err != nil {
		return err
	}
	return s.viewInto(n, r)
}

func (s *Service) batchFail(ctx context.Context, c Caller, o *BatchOp, r *BatchResult) error {
	n, err := s.Fail(ctx, o.failParams(c))
	if err != nil {
		return err
	}
	return s.viewInto(n, r)
}

func (s *Service) batchProgress(ctx context.Context, c Caller, o *BatchOp, r *BatchResult) error {
	res, err := s.Progress(ctx, o.progressParams(c))
	if err != nil {
		return err
	}
	if err := s.viewInto(res.Node, r); err != nil {
		return err
	}
	r.Lease = res.Lease
	return nil
}

// batchCompletes runs a batch of completes through CompleteMany, many per
// transaction, in the order given (which keeps the order per node too).
func (s *Service) batchCompletes(ctx context.Context, c Caller, ops []BatchOp) []BatchResult {
	params := make([]CompleteParams, len(ops))
	for i := range ops {
		params[i] = ops[i].completeParams(c)
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
func (s *Service) completedView(o BatchOp, n *records.Node) (r BatchResult) {
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

// viewInto puts the view of n, just written, in r.
func (s *Service) viewInto(n *records.Node, r *BatchResult) error {
	v, err := s.view(n)
	if err != nil {
		return err
	}
	r.Node = v
	return nil
}

// view is the view of n, just written.
func (s *Service) view(n *records.Node) (NodeView, error) {
	views, err := s.Views(n)
	if err != nil {
		return NodeView{}, err
	}
	return views[0], nil
}
