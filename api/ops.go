package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/tenancy"
)

// An op is one lease or lifecycle action on one node, as its single
// endpoint serves it. POST /v1/batch reads each of its ops with the same
// request reader and answers it with the same answer builder, so a batched
// op answers exactly as its endpoint would.
type op func(ctx context.Context, p *tenancy.Principal, id string, body []byte) (int, any, error)

// serveOp runs op for the :id of the request with its body.
func (s *Server) serveOp(o op) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := nodeID(c)
		if err != nil {
			return err
		}
		body, err := s.readBody(c)
		if err != nil {
			return err
		}
		status, out, err := o(c.Request().Context(), principal(c), id, body)
		if err != nil {
			return err
		}
		return writeJSON(c, status, out)
	}
}

type holderBody struct {
	Session string `json:"session"`
	Fence   *int64 `json:"fence"`
}

func (b holderBody) params(p *tenancy.Principal, id string) (leasing.HolderParams, error) {
	hp := leasing.HolderParams{Tenant: p.Tenant, NodeID: id, By: p.Subject, Session: b.Session}
	if b.Fence != nil {
		if *b.Fence < 1 {
			return hp, fault.Invalidf("fence", "must be a positive integer")
		}
		hp.Fence = uint64(*b.Fence)
	}
	return hp, nil
}

// msOf is a millisecond field as a duration, 0 when absent. decodeStrict
// has held the field to its range already.
func msOf(ms *int64) time.Duration {
	if ms == nil {
		return 0
	}
	return duration.FromMS(*ms)
}

type claimBody struct {
	Session string `json:"session"`
	TTLMS   *int64 `json:"ttl_ms"`
}

func (s *Server) opClaim(ctx context.Context, p *tenancy.Principal, id string, body []byte) (int, any, error) {
	var b claimBody
	if err := decodeStrict(body, &b, true); err != nil {
		return 0, nil, err
	}
	return s.claim(ctx, p, id, b)
}

func (s *Server) claim(ctx context.Context, p *tenancy.Principal, id string, b claimBody) (int, any, error) {
	res, err := s.leases.Claim(ctx, leasing.ClaimParams{Tenant: p.Tenant, NodeID: id, By: p.Subject, Session: b.Session, TTL: msOf(b.TTLMS)})
	if err != nil {
		return 0, nil, err
	}
	out, err := s.claimJSON(res)
	return http.StatusOK, out, err
}

// The answers of the lease and lifecycle calls are structs rather than maps:
// they are on every worker's path, and a struct encodes without boxing each
// value and sorting the keys.

type claimAnswer struct {
	OK      bool           `json:"ok"`
	Status  records.Status `json:"status"`
	Renewed bool           `json:"renewed"`
	Lease   leaseJSON      `json:"lease"`
	Edge    *edgeJSON      `json:"edge"`
	Node    nodeJSON       `json:"node"`
	capped
}

// capped is present when a TTL asked for was capped to the tenant's maximum.
type capped struct {
	CappedToMax   bool  `json:"capped_to_max,omitempty"`
	ClaimTTLMaxMS int64 `json:"claim_ttl_max_ms,omitempty"`
}

func cappedTo(isCapped bool, max time.Duration) capped {
	if !isCapped {
		return capped{}
	}
	return capped{CappedToMax: true, ClaimTTLMaxMS: max.Milliseconds()}
}

type renewAnswer struct {
	OK          bool           `json:"ok"`
	Status      records.Status `json:"status"`
	Lease       leaseJSON      `json:"lease"`
	InboxUnread int64          `json:"inbox_unread"`
}

type extendAnswer struct {
	OK     bool           `json:"ok"`
	Status records.Status `json:"status"`
	Lease  leaseJSON      `json:"lease"`
	capped
}

type releaseAnswer struct {
	OK     bool           `json:"ok"`
	Status records.Status `json:"status"`
}

type nodeAnswer struct {
	OK     bool           `json:"ok"`
	Status records.Status `json:"status"`
	Node   nodeJSON       `json:"node"`
}

type progressAnswer struct {
	OK          bool           `json:"ok"`
	Status      records.Status `json:"status"`
	Lease       leaseJSON      `json:"lease"`
	Node        nodeJSON       `json:"node"`
	InboxUnread int64          `json:"inbox_unread"`
}

func (s *Server) claimJSON(res *leasing.ClaimResult) (*claimAnswer, error) {
	views, err := s.nodes.Views(res.Node)
	if err != nil {
		return nil, err
	}
	return &claimAnswer{
		OK: true, Status: res.Node.Status, Renewed: res.Renewed,
		Lease: toLease(res.Node.ID, res.Lease), Edge: toEdge(res.Edge), Node: toNode(views[0]),
		capped: cappedTo(res.Capped, res.TTLMax),
	}, nil
}

// The request readers below (renewRequest, extendRequest, ...) read the
// body of one op into the params of its call; a single endpoint and a batch
// op (handlers_batch.go) read it with the same one, and answer with the same
// answer builder (renewAnswerOf, ...), so that the two answer alike.

// renewRequest reads the body of p's renew of node id.
func renewRequest(p *tenancy.Principal, id string, body []byte) (leasing.HolderParams, error) {
	var b holderBody
	if err := decodeStrict(body, &b, true); err != nil {
		return leasing.HolderParams{}, err
	}
	return b.params(p, id)
}

func (s *Server) opRenew(ctx context.Context, p *tenancy.Principal, id string, body []byte) (int, any, error) {
	hp, err := renewRequest(p, id, body)
	if err != nil {
		return 0, nil, err
	}
	res, err := s.leases.Renew(ctx, hp)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, s.renewAnswerOf(p, id, res.Node, res.Lease), nil
}

// renewAnswerOf is the answer of p's renew of node id: n with lease l.
func (s *Server) renewAnswerOf(p *tenancy.Principal, id string, n *records.Node, l *records.Lease) *renewAnswer {
	return &renewAnswer{
		OK: true, Status: n.Status, Lease: toLease(id, l),
		InboxUnread: s.messages.Unread(p.Tenant, p.Subject, id),
	}
}

// extendRequest reads the body of p's extend of node id: the holder, and by
// how much.
func extendRequest(p *tenancy.Principal, id string, body []byte) (leasing.HolderParams, time.Duration, error) {
	var b struct {
		holderBody
		MS *int64 `json:"ms"`
	}
	if err := decodeStrict(body, &b, true); err != nil {
		return leasing.HolderParams{}, 0, err
	}
	if b.MS == nil {
		return leasing.HolderParams{}, 0, fault.Invalidf("ms", "is required")
	}
	hp, err := b.params(p, id)
	return hp, msOf(b.MS), err
}

func (s *Server) opExtend(ctx context.Context, p *tenancy.Principal, id string, body []byte) (int, any, error) {
	hp, by, err := extendRequest(p, id, body)
	if err != nil {
		return 0, nil, err
	}
	res, err := s.leases.Extend(ctx, hp, by)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, extendAnswerOf(id, res.Lease, res.Capped, res.TTLMax), nil
}

// extendAnswerOf is the answer of an extend of node id: its lease l, capped
// to max when isCapped.
func extendAnswerOf(id string, l *records.Lease, isCapped bool, max time.Duration) *extendAnswer {
	return &extendAnswer{
		OK: true, Status: records.StatusRunning, Lease: toLease(id, l), capped: cappedTo(isCapped, max),
	}
}

type releaseBody struct {
	holderBody
	Reason string `json:"reason"`
	To     string `json:"to"`
}

// releaseParams are the params of p's release of node id.
func (b releaseBody) releaseParams(p *tenancy.Principal, id string) (leasing.ReleaseParams, error) {
	hp, err := b.params(p, id)
	if err != nil {
		return leasing.ReleaseParams{}, err
	}
	hp.Override = p.Allows(tenancy.RoleDispatcher)
	return leasing.ReleaseParams{HolderParams: hp, Reason: b.Reason, To: b.To}, nil
}

// releaseRequest reads the body of p's release of node id.
func releaseRequest(p *tenancy.Principal, id string, body []byte) (leasing.ReleaseParams, error) {
	var b releaseBody
	if err := decodeStrict(body, &b, true); err != nil {
		return leasing.ReleaseParams{}, err
	}
	return b.releaseParams(p, id)
}

func (s *Server) opRelease(ctx context.Context, p *tenancy.Principal, id string, body []byte) (int, any, error) {
	rp, err := releaseRequest(p, id, body)
	if err != nil {
		return 0, nil, err
	}
	return s.releaseWith(ctx, rp)
}

func (s *Server) release(ctx context.Context, p *tenancy.Principal, id string, b releaseBody) (int, any, error) {
	rp, err := b.releaseParams(p, id)
	if err != nil {
		return 0, nil, err
	}
	return s.releaseWith(ctx, rp)
}

// releaseWith releases a lease and answers with the node's status.
func (s *Server) releaseWith(ctx context.Context, rp leasing.ReleaseParams) (int, any, error) {
	n, err := s.leases.Release(ctx, rp)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, releaseAnswerOf(n), nil
}

// releaseAnswerOf is the answer of a release that left n.
func releaseAnswerOf(n *records.Node) *releaseAnswer {
	return &releaseAnswer{OK: true, Status: n.Status}
}

type completeBody struct {
	holderBody
	Result json.RawMessage    `json:"result"`
	Usage  map[string]float64 `json:"usage"`
	// Next, on POST /v1/nodes/{id}/complete only, asks for the next claim
	// of a queue in the same call.
	Next *nextClaimBody `json:"next"`
}

// nextClaimBody is the body of a claim-next, with its queue, carried by a
// complete that asks for the next node.
type nextClaimBody struct {
	Queue string `json:"queue"`
	claimFields
}

// completeParams are the params of p's complete of node id.
func (b completeBody) completeParams(p *tenancy.Principal, id string) (nodes.CompleteParams, error) {
	hp, err := b.params(p, id)
	if err != nil {
		return nodes.CompleteParams{}, err
	}
	hp.Override = p.Allows(tenancy.RoleDispatcher)
	return nodes.CompleteParams{HolderParams: hp, Result: b.Result, Usage: b.Usage}, nil
}

// completeRequest reads the body of p's complete of node id in a batch, or
// of one without next, into its params: a batch op cannot ask for the next
// claim.
func completeRequest(p *tenancy.Principal, id string, body []byte) (nodes.CompleteParams, error) {
	var b completeBody
	if err := decodeStrict(body, &b, true); err != nil {
		return nodes.CompleteParams{}, err
	}
	if b.Next != nil {
		return nodes.CompleteParams{}, fault.Invalidf("next", "unknown field in a batch op: use POST /v1/queues/{queue}/claims to claim many")
	}
	return b.completeParams(p, id)
}

// opCompleteNode is POST /v1/nodes/{id}/complete: a completion, as the
// batch op makes it, and with next the claim of the queue's next node as well.
func (s *Server) opCompleteNode(ctx context.Context, p *tenancy.Principal, id string, body []byte) (int, any, error) {
	var b completeBody
	if err := decodeStrict(body, &b, true); err != nil {
		return 0, nil, err
	}
	if b.Next == nil {
		return s.complete(ctx, p, id, b)
	}
	cp, err := b.completeParams(p, id)
	if err != nil {
		return 0, nil, err
	}
	np := b.Next.params(callerOf(p), b.Next.Queue, s.stopped())
	if !graphstore.ValidQueue(np.Queue) {
		return 0, nil, fault.Invalidf("next.queue", "is required: 1-128 characters of [A-Za-z0-9._:-], starting with a letter or digit")
	}
	if np.Wait > 0 {
		release, err := s.waiters.acquire(p)
		if err != nil {
			return 0, nil, err
		}
		defer release()
	}
	n, got, err := s.nodes.CompleteAndClaimNext(ctx, cp, np)
	if err != nil {
		return 0, nil, err
	}
	done, err := s.nodeAnswerOf(n)
	if err != nil {
		return 0, nil, err
	}
	out := &completeNextAnswer{nodeAnswer: *done}
	if len(got) > 0 {
		if out.Next, err = s.claimJSON(got[0]); err != nil {
			return 0, nil, err
		}
	}
	return http.StatusOK, out, nil
}

// completeNextAnswer is a complete's answer when it asked for the next
// claim: next is that claim, or null when nothing was ready in time.
type completeNextAnswer struct {
	nodeAnswer
	Next *claimAnswer `json:"next"`
}

func (s *Server) complete(ctx context.Context, p *tenancy.Principal, id string, b completeBody) (int, any, error) {
	cp, err := b.completeParams(p, id)
	if err != nil {
		return 0, nil, err
	}
	return s.completeWith(ctx, cp)
}

// completeWith completes a node and answers with it.
func (s *Server) completeWith(ctx context.Context, cp nodes.CompleteParams) (int, any, error) {
	n, err := s.nodes.Complete(ctx, cp)
	if err != nil {
		return 0, nil, err
	}
	return s.nodeAnswer(n)
}

// nodeAnswer is the {ok, status, node} answer of the lifecycle calls.
func (s *Server) nodeAnswer(n *records.Node) (int, any, error) {
	out, err := s.nodeAnswerOf(n)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}

// nodeAnswerOf is nodeAnswer's body: {ok, status, node} for n.
func (s *Server) nodeAnswerOf(n *records.Node) (*nodeAnswer, error) {
	views, err := s.nodes.Views(n)
	if err != nil {
		return nil, err
	}
	return viewAnswerOf(views[0]), nil
}

// viewAnswerOf is {ok, status, node} for a node's view v.
func viewAnswerOf(v nodes.NodeView) *nodeAnswer {
	return &nodeAnswer{OK: true, Status: v.Status, Node: toNode(v)}
}

// failRequest reads the body of p's fail of node id.
func failRequest(p *tenancy.Principal, id string, body []byte) (nodes.FailParams, error) {
	var b struct {
		holderBody
		Error     *string `json:"error"`
		Requeue   *bool   `json:"requeue"`
		RetryInMS *int64  `json:"retry_in_ms"`
	}
	if err := decodeStrict(body, &b, false); err != nil {
		return nodes.FailParams{}, err
	}
	if b.Error == nil || *b.Error == "" {
		return nodes.FailParams{}, fault.Invalidf("error", "is required")
	}
	hp, err := b.params(p, id)
	if err != nil {
		return nodes.FailParams{}, err
	}
	hp.Override = p.Allows(tenancy.RoleDispatcher)
	fp := nodes.FailParams{HolderParams: hp, Error: *b.Error, Requeue: b.Requeue}
	if b.RetryInMS != nil {
		d := msOf(b.RetryInMS)
		fp.RetryIn = &d
	}
	return fp, nil
}

func (s *Server) opFail(ctx context.Context, p *tenancy.Principal, id string, body []byte) (int, any, error) {
	fp, err := failRequest(p, id, body)
	if err != nil {
		return 0, nil, err
	}
	n, err := s.nodes.Fail(ctx, fp)
	if err != nil {
		return 0, nil, err
	}
	return s.nodeAnswer(n)
}

// progressRequest reads the body of p's progress of node id.
func progressRequest(p *tenancy.Principal, id string, body []byte) (nodes.ProgressParams, error) {
	var b struct {
		holderBody
		Pct     *float64           `json:"pct"`
		Message *string            `json:"message"`
		Usage   map[string]float64 `json:"usage"`
	}
	if err := decodeStrict(body, &b, true); err != nil {
		return nodes.ProgressParams{}, err
	}
	hp, err := b.params(p, id)
	if err != nil {
		return nodes.ProgressParams{}, err
	}
	return nodes.ProgressParams{HolderParams: hp, Pct: b.Pct, Message: b.Message, Usage: b.Usage}, nil
}

func (s *Server) opProgress(ctx context.Context, p *tenancy.Principal, id string, body []byte) (int, any, error) {
	pp, err := progressRequest(p, id, body)
	if err != nil {
		return 0, nil, err
	}
	res, err := s.nodes.Progress(ctx, pp)
	if err != nil {
		return 0, nil, err
	}
	views, err := s.nodes.Views(res.Node)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, s.progressAnswerOf(p, id, views[0], res.Lease), nil
}

// progressAnswerOf is the answer of p's progress of node id: its view v and
// its renewed lease l.
func (s *Server) progressAnswerOf(p *tenancy.Principal, id string, v nodes.NodeView, l *records.Lease) *progressAnswer {
	return &progressAnswer{
		OK: true, Status: v.Status, Lease: toLease(id, l), Node: toNode(v),
		InboxUnread: s.messages.Unread(p.Tenant, p.Subject, id),
	}
}

// decodeFor reads the node id and the optional JSON body of a node call.
func (s *Server) decodeFor(c echo.Context, v any) (string, error) {
	id, err := nodeID(c)
	if err != nil {
		return "", err
	}
	body, err := s.readBody(c)
	if err != nil {
		return "", err
	}
	return id, decodeStrict(body, v, true)
}
