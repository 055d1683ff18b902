package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/tenancy"
)

type batchResult struct {
	ID     string `json:"id"`
	Status int    `json:"status"`
	Body   any    `json:"body"`
}

// A batchReader reads the body of one op of POST /v1/batch, p's op on node
// id, into the nodes.BatchOp that runs it, with the request reader of its
// single endpoint (ops.go).
type batchReader func(p *tenancy.Principal, id string, body []byte) (nodes.BatchOp, error)

// batchReaders are the ops of POST /v1/batch by name.
func batchReaders() map[string]batchReader {
	return map[string]batchReader{
		"renew": func(p *tenancy.Principal, id string, body []byte) (nodes.BatchOp, error) {
			hp, err := renewRequest(p, id, body)
			return nodes.RenewOp(hp), err
		},
		"extend": func(p *tenancy.Principal, id string, body []byte) (nodes.BatchOp, error) {
			hp, by, err := extendRequest(p, id, body)
			return nodes.ExtendOp(hp, by), err
		},
		"release": func(p *tenancy.Principal, id string, body []byte) (nodes.BatchOp, error) {
			rp, err := releaseRequest(p, id, body)
			return nodes.ReleaseOp(rp), err
		},
		"complete": func(p *tenancy.Principal, id string, body []byte) (nodes.BatchOp, error) {
			cp, err := completeRequest(p, id, body)
			return nodes.CompleteOp(cp), err
		},
		"fail": func(p *tenancy.Principal, id string, body []byte) (nodes.BatchOp, error) {
			fp, err := failRequest(p, id, body)
			return nodes.FailOp(fp), err
		},
		"progress": func(p *tenancy.Principal, id string, body []byte) (nodes.BatchOp, error) {
			pp, err := progressRequest(p, id, body)
			return nodes.ProgressOp(pp), err
		},
	}
}

// batch is POST /v1/batch: many lease ops in one request, run by
// nodes.Service.Batch. Each op succeeds or fails on its own, exactly as its
// endpoint would; a request whose ops cannot be told apart (not objects,
// no op or id, an unknown op) is refused whole. An op whose body its
// endpoint would refuse is answered with that refusal and not run.
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
	if len(req.Ops) == 0 || len(req.Ops) > nodes.MaxBatchOps {
		return fault.Invalidf("ops", "must hold 1 to %d ops", nodes.MaxBatchOps)
	}
	p := principal(c)
	requestID := c.Response().Header().Get(echo.HeaderXRequestID)
	items := make([]batchResult, len(req.Ops))
	ops := make([]nodes.BatchOp, 0, len(req.Ops))
	at := make([]int, 0, len(req.Ops)) // the request's op each of ops is
	for i, raw := range req.Ops {
		id, read, body, err := s.splitBatchOp(i, raw)
		if err != nil {
			return err
		}
		op, err := read(p, id, body)
		if err != nil {
			items[i] = s.batchItem(p, nodes.BatchResult{NodeID: id, Err: err}, requestID)
			continue
		}
		ops, at = append(ops, op), append(at, i)
	}
	results, err := s.nodes.Batch(c.Request().Context(), callerOf(p), ops)
	if err != nil {
		return err
	}
	for j, r := range results {
		items[at[j]] = s.batchItem(p, r, requestID)
	}
	return writeJSON(c, http.StatusOK, &batchResults{Results: items})
}

// splitBatchOp reads op i of a batch, raw, into its node id, its reader and
// its body (the op's other members); an op that is not an object with "op"
// and "id" strings naming a known op and a valid node id is a 400 for the
// whole batch.
func (s *Server) splitBatchOp(i int, raw json.RawMessage) (id string, read batchReader, body []byte, err error) {
	if name, id, rest, ok := splitOp(raw); ok {
		read, known := s.batchOps[name]
		if known && graphstore.ValidID(id) {
			return id, read, rest, nil
		}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return "", nil, nil, fault.Invalidf(fmt.Sprintf("ops[%d]", i), "must be an object")
	}
	// Not into id itself: its address taken would put every op's id on the
	// heap, the fast path's included.
	var name, nodeID string
	if json.Unmarshal(fields["op"], &name) != nil || json.Unmarshal(fields["id"], &nodeID) != nil {
		return "", nil, nil, fault.Invalidf(fmt.Sprintf("ops[%d]", i), `needs "op" and "id" strings`)
	}
	id = nodeID
	read, ok := s.batchOps[name]
	if !ok {
		return "", nil, nil, fault.Invalidf(fmt.Sprintf("ops[%d].op", i), "must be one of renew, extend, release, complete, fail, progress")
	}
	if !graphstore.ValidID(id) {
		return "", nil, nil, fault.Invalidf(fmt.Sprintf("ops[%d].id", i), "is not a valid node id")
	}
	delete(fields, "op")
	delete(fields, "id")
	if body, err = json.Marshal(fields); err != nil {
		return "", nil, nil, err
	}
	return id, read, body, nil
}

// batchItem is one op's entry in a batch's results, p's op: the answer its
// endpoint gives, or the problem its error makes (an error of no known kind
// logged, as a handler's is). Every entry is made here.
func (s *Server) batchItem(p *tenancy.Principal, r nodes.BatchResult, requestID string) batchResult {
	if r.Err != nil {
		prob, known := problemFor(r.Err)
		prob.RequestID = requestID
		if !known {
			s.log.Error("internal error in batch op", "err", r.Err, "node", r.NodeID, "request_id", requestID)
		}
		return batchResult{ID: r.NodeID, Status: prob.Status, Body: prob}
	}
	var out any
	switch r.Kind {
	case nodes.BatchRenew:
		out = s.renewAnswerOf(p, r.NodeID, r.Node.Node, r.Lease)
	case nodes.BatchExtend:
		out = extendAnswerOf(r.NodeID, r.Lease, r.Capped, r.TTLMax)
	case nodes.BatchRelease:
		out = releaseAnswerOf(r.Node.Node)
	case nodes.BatchComplete, nodes.BatchFail:
		out = viewAnswerOf(r.Node)
	case nodes.BatchProgress:
		out = s.progressAnswerOf(p, r.NodeID, r.Node, r.Lease)
	default:
		return s.batchItem(p, nodes.BatchResult{NodeID: r.NodeID, Err: fmt.Errorf("a batch result of no known kind (%d)", r.Kind)}, requestID)
	}
	return batchResult{ID: r.NodeID, Status: http.StatusOK, Body: out}
}
