package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/tenant"
)

// MaxBatchOps is the most ops one POST /v1/batch may hold.
const MaxBatchOps = 1000

// batchParallelism bounds how many ops of one batch are in flight at once.
const batchParallelism = 64

type batchResult struct {
	ID     string `json:"id"`
	Status int    `json:"status"`
	Body   any    `json:"body"`
}

// batch runs many lease ops in one request. Each op succeeds or fails on its
// own, exactly as its endpoint would, and ops on the same node run in the
// order given. A batch of completes (what a worker sends for the jobs it
// finished) runs many per transaction (batchCompletes); any other runs one
// goroutine per node (batchConcurrent).
func (s *Server) batch(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		Ops []json.RawMessage `json:"ops"`
	}
	if err := decodeStrict(body, &req, false); err != nil {
		return err
	}
	if len(req.Ops) == 0 || len(req.Ops) > MaxBatchOps {
		return fault.Invalidf("ops", "must hold 1 to %d ops", MaxBatchOps)
	}
	ops := make([]batchOp, len(req.Ops))
	for i, raw := range req.Ops {
		if name, id, rest, ok := splitOp(raw); ok {
			run, known := s.batchOps[name]
			if known && graph.ValidID(id) {
				ops[i] = batchOp{name: name, id: id, run: run, body: rest}
				continue
			}
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
			return fault.Invalidf(fmt.Sprintf("ops[%d]", i), "must be an object")
		}
		var name, id string
		if json.Unmarshal(fields["op"], &name) != nil || json.Unmarshal(fields["id"], &id) != nil {
			return fault.Invalidf(fmt.Sprintf("ops[%d]", i), `needs "op" and "id" strings`)
		}
		run, ok := s.batchOps[name]
		if !ok {
			return fault.Invalidf(fmt.Sprintf("ops[%d].op", i), "must be one of renew, extend, release, complete, fail, progress")
		}
		if !graph.ValidID(id) {
			return fault.Invalidf(fmt.Sprintf("ops[%d].id", i), "is not a valid node id")
		}
		delete(fields, "op")
		delete(fields, "id")
		rest, err := json.Marshal(fields)
		if err != nil {
			return err
		}
		ops[i] = batchOp{name: name, id: id, run: run, body: rest}
	}
	ctx, p := c.Request().Context(), principal(c)
	// Every op is answered once applied; the batch answers once all of them
	// are durable, with one wait for the log instead of one per op.
	ctx, durable := graph.WithBarrier(ctx)
	// Read once here: the response's header map is not safe to touch from
	// the goroutines below.
	requestID := c.Response().Header().Get(echo.HeaderXRequestID)
	var results []batchResult
	if allComplete(ops) {
		results = s.batchCompletes(ctx, p, ops, requestID)
	} else {
		results = s.batchConcurrent(ctx, p, ops, requestID)
	}
	if err := durable.Wait(); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, &batchResults{Results: results})
}

// batchOp is one op of POST /v1/batch, read.
type batchOp struct {
	name string
	id   string
	run  op
	body []byte
}

// batchConcurrent runs ops with one goroutine per node: ops on different
// nodes run concurrently (and so share fsyncs through the store's group
// commit), ops on the same node in the order given.
func (s *Server) batchConcurrent(ctx context.Context, p *tenant.Principal, ops []batchOp, requestID string) []batchResult {
	results := make([]batchResult, len(ops))
	byNode := map[string][]int{}
	var order []string
	for i, o := range ops {
		if _, ok := byNode[o.id]; !ok {
			order = append(order, o.id)
		}
		byNode[o.id] = append(byNode[o.id], i)
	}
	sem := make(chan struct{}, batchParallelism)
	var wg sync.WaitGroup
	for _, id := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func(idx []int) {
			defer wg.Done()
			defer func() { <-sem }()
			for _, i := range idx {
				results[i] = s.runBatchOp(ctx, p, ops[i].id, ops[i].run, ops[i].body, requestID)
			}
		}(byNode[id])
	}
	wg.Wait()
	return results
}

// allComplete reports whether every op of a batch is a complete, the batch a
// worker sends for the jobs it finished.
func allComplete(ops []batchOp) bool {
	for _, o := range ops {
		if o.name != "complete" {
			return false
		}
	}
	return true
}

// batchCompletes runs a batch of completes through nodes.CompleteMany, many
// per transaction, in the order given (which is also the order per node the
// concurrent path keeps). Each op's answer is the one its endpoint would give.
func (s *Server) batchCompletes(ctx context.Context, p *tenant.Principal, ops []batchOp, requestID string) []batchResult {
	results := make([]batchResult, len(ops))
	params := make([]nodes.CompleteParams, 0, len(ops))
	at := make([]int, 0, len(ops)) // the op each of params is
	for i, o := range ops {
		// Read on the handler's goroutine, but recovered as an op's panic is
		// on the concurrent path: it is that op's 500.
		_, _, err := runRecovered(ctx, p, o.id, o.body, func(_ context.Context, p *tenant.Principal, id string, body []byte) (int, any, error) {
			cp, err := completeRequest(p, id, body)
			if err == nil {
				params, at = append(params, cp), append(at, i)
			}
			return 0, nil, err
		})
		if err != nil {
			results[i] = s.batchAnswer(o.id, 0, nil, err, requestID)
		}
	}
	nodes, errs := s.work.CompleteMany(ctx, params)
	for j, i := range at {
		if errs[j] != nil {
			results[i] = s.batchAnswer(ops[i].id, 0, nil, errs[j], requestID)
			continue
		}
		status, out, err := runRecovered(ctx, p, ops[i].id, nil, func(context.Context, *tenant.Principal, string, []byte) (int, any, error) {
			return s.nodeAnswer(nodes[j])
		})
		results[i] = s.batchAnswer(ops[i].id, status, out, err, requestID)
	}
	return results
}

func (s *Server) runBatchOp(ctx context.Context, p *tenant.Principal, id string, run op, body []byte, requestID string) batchResult {
	status, out, err := runRecovered(ctx, p, id, body, run)
	return s.batchAnswer(id, status, out, err, requestID)
}

// batchAnswer is one op's entry in a batch's results: its answer, or the
// problem its error makes (an unknown error logged, as a handler's is).
func (s *Server) batchAnswer(id string, status int, out any, err error, requestID string) batchResult {
	if err == nil {
		return batchResult{ID: id, Status: status, Body: out}
	}
	prob, known := problemFor(err)
	prob.RequestID = requestID
	if !known {
		s.log.Error("internal error in batch op", "err", err, "node", id, "request_id", prob.RequestID)
	}
	return batchResult{ID: id, Status: prob.Status, Body: prob}
}

// runRecovered runs one batch op, turning a panic into an error (a 500 for
// that op): ops run on goroutines of their own, outside the middleware that
// recovers a handler's panic, where one would end the process.
func runRecovered(ctx context.Context, p *tenant.Principal, id string, body []byte, run op) (status int, out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in a batch op: %v", r)
		}
	}()
	return run(ctx, p, id, body)
}
