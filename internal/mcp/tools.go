package mcp

import (
	"context"
	"net/http"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tether-run/tether/client"
)

// The tools' inputs are the API's request types (the generated client's),
// with the path parameter beside them: the schema an agent sees is derived
// from the same Go types the CLI and the runner send, so the two cannot
// drift apart.

type claimNextIn struct {
	Queue string `json:"queue" jsonschema:"The queue to claim from. Required."`
	client.ClaimNextRequest
}

type nodeIn struct {
	NodeID string `json:"node_id" jsonschema:"The node's id. Required."`
}

type renewIn struct {
	NodeID string `json:"node_id" jsonschema:"The node whose lease to renew. Required."`
	client.RenewRequest
}

type progressIn struct {
	NodeID string `json:"node_id" jsonschema:"The node you hold. Required."`
	client.ProgressRequest
}

type completeIn struct {
	NodeID string `json:"node_id" jsonschema:"The node you hold. Required."`
	client.CompleteRequest
}

type failIn struct {
	NodeID string `json:"node_id" jsonschema:"The node you hold. Required."`
	client.FailRequest
}

type releaseIn struct {
	NodeID string `json:"node_id" jsonschema:"The node you hold. Required."`
	client.ReleaseRequest
}

type commentIn struct {
	NodeID string `json:"node_id" jsonschema:"The node to comment on. Required."`
	client.CommentCreate
}

type historyIn struct {
	NodeID string `json:"node_id" jsonschema:"The node whose events to list. Required."`
	client.ListNodeEventsParams
}

// fenced are the lease members of the requests that act on a held lease.
type fenced struct {
	fence   **int64
	session **string
}

// fill gives a request without a fence the fence and session of the lease
// the session keeps on the node: an agent need not copy them around.
func (s *session) fill(nodeID string, f fenced) {
	l, ok := s.lease(nodeID)
	if !ok || *f.fence != nil {
		return
	}
	fence := l.Fence
	*f.fence = &fence
	if *f.session == nil {
		*f.session = l.Session
	}
}

// def is what a tool is to an agent: its name, a description, its hints,
// and the spec's request schemas or operations that describe its input
// (see inputSchema); input replaces the derived input schema when set.
type def struct {
	name, title, desc string
	hints             hints
	from              []string
	input             *jsonschema.Schema
}

// tool registers a tool whose input is In and whose answer is Out. h
// answers either Out (the structured content, validated by the SDK against
// the output schema, and its JSON as text) or a tool error.
func tool[In, Out any](srv *sdk.Server, d def, h func(context.Context, In) (*Out, *sdk.CallToolResult)) {
	input := d.input
	if input == nil {
		input = inputSchema[In](d.from...)
	}
	sdk.AddTool(srv, &sdk.Tool{
		Name: d.name, Title: d.title, Description: d.desc, Annotations: d.hints.annotations(d.title),
		InputSchema: input, OutputSchema: outputSchema[Out](),
	}, func(ctx context.Context, _ *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
		if bad := badPathArg(in); bad != nil {
			return bad, nil, nil
		}
		out, bad := h(ctx, in)
		if bad != nil {
			return bad, nil, nil
		}
		return nil, out, nil
	})
}

func (s *session) addTools(srv *sdk.Server) {
	// Working a claim.
	tool(srv, def{name: "claim_next", title: "Claim the next node of a queue",
		desc: "Claim the next ready node of a queue (long poll up to wait_ms). " +
			"Answers the node (id, title, body) and your lease (fence, expires_at). While you hold the lease, this MCP server renews it for you " +
			"until you call complete, fail or release, or the session ends: think as long as you need. " +
			"An empty queue answers claimed: false; when nodes are ready but a concurrency limit, start rate or usage budget holds them back, " +
			"throttled says which key, why, and retry_after_ms: when to call again.",
		// Not idempotent: each call claims another node.
		hints: additive, from: []string{"ClaimNextRequest"}}, s.claimNext)
	tool(srv, def{name: "renew", title: "Renew your lease",
		desc: "Renew your lease on a node now (the server also renews it for you). " +
			"fence and session default to the lease this session holds.",
		// A repeat only moves the same lease's expiry again.
		hints: hints{idempotent: true}, from: []string{"RenewRequest"}}, s.renew)
	tool(srv, def{name: "progress", title: "Report progress",
		desc: "Report progress on a node you hold (message, pct 0-100, usage counters); also renews the lease.",
		// Not idempotent: usage counters are summed and every report is an event.
		hints: additive, from: []string{"ProgressRequest"}}, s.progress)
	tool(srv, def{name: "complete", title: "Complete a node",
		desc: "Complete a node you hold, with an optional JSON result. Ends the lease; done is final. " +
			"Completing a node that is already done changes nothing and answers already_done: true. " +
			"With next ({\"queue\": ...} and claim_next's other fields) the same call claims your next node of that queue: " +
			"the answer's claimed is that claim, kept for you as claim_next's is.",
		// Destructive: done is final, the run cannot be taken back. Not
		// idempotent: a bare repeat changes nothing (already_done), but one
		// with next claims another node.
		hints: hints{destructive: true}, from: []string{"CompleteRequest"}}, s.complete)
	tool(srv, def{name: "fail", title: "Fail a run",
		desc: "Fail a run of a node you hold, saying why (error). It is retried while attempts remain unless requeue is false. Ends the lease.",
		// Destructive: it spends the attempt and may end the node failed or
		// dead. Not idempotent: a repeat after the node was claimed again
		// fails that run too.
		hints: hints{destructive: true}, from: []string{"FailRequest"}}, s.fail)
	tool(srv, def{name: "release", title: "Give a node back",
		desc: "Give a node you hold back to its queue without spending an attempt, or hand it to another identity (to). Ends the lease.",
		// Not destructive: the node goes back to its queue as it was. Not
		// idempotent: a repeat after it was claimed again releases that claim.
		hints: hints{}, from: []string{"ReleaseRequest"}}, s.release)
	tool(srv, def{name: "comment", title: "Comment on a node",
		desc:  "Leave a note on a node, for people and other agents.",
		hints: additive, from: []string{"CommentCreate"}}, s.comment)

	// Planning work.
	tool(srv, def{name: "create_node", title: "Create a node",
		desc: "Create a node (dispatcher role): a unit of work for others. With a queue it is queued for workers; " +
			"parent makes it a child of another node (wait_for with children: true then waits for all of them); " +
			"depends_on makes it wait for other nodes. Answers the node; wait_for blocks until it ends.",
		hints: additive, from: []string{"NodeCreate"}}, s.createNode)
	tool(srv, def{name: "create_child", title: "Create a child node",
		desc: "Create a node as a child of another (parent is required; type too): a worker may split a node it holds. " +
			"With a queue it is queued for work; depends_on makes it wait for other nodes.",
		hints: additive, input: childSchema()}, s.createChild)
	tool(srv, def{name: "wait_for", title: "Wait for nodes to end",
		desc: "Block until a node ends (done, failed, dead or cancelled), or with children: true until all its children have, " +
			"up to max_wait_ms. Answers every node waited for with its status; ended: false with timed_out: true when the time ran out first.",
		hints: readOnly}, s.waitFor)

	// Reading.
	tool(srv, def{name: "get_node", title: "Read a node",
		desc:  "Read a node: its status, title, body, props, result, last error, lease holder and attempts.",
		hints: readOnly}, s.getNode)
	tool(srv, def{name: "list_nodes", title: "List nodes",
		desc: "List nodes, filtered by status, queue, type, label, holder, parent, text in id or title (q) and time; " +
			"a page at a time (limit, then cursor = next_cursor). Ordered by priority, then age.",
		hints: readOnly, from: []string{"GET /v1/nodes"}}, s.listNodes)
	tool(srv, def{name: "list_queues", title: "List queues",
		desc: "List the tenant's queues with their nodes counted by status, how many are ready to claim, and whether each is paused; " +
			"a page at a time, by name (limit, then cursor = next_cursor).",
		hints: readOnly, from: []string{"GET /v1/queues"}}, s.listQueues)
	tool(srv, def{name: "history", title: "A node's events",
		desc:  "List a node's events (created, claimed, progress, released, completed, failed, ...), oldest first; page with after.",
		hints: readOnly, from: []string{"GET /v1/nodes/{id}/events"}}, s.history)
	s.addLimitTools(srv)

	// Messages.
	tool(srv, def{name: "inbox", title: "Read your messages",
		desc: "List the messages sent to you (or to a node you hold): unread=true for new ones; wait_ms long polls.",
		// Not read-only: a message listed for the first time is marked
		// delivered, which its sender sees; listing again changes nothing.
		hints: hints{idempotent: true}, from: []string{"GET /v1/inbox"}}, s.inbox)
	tool(srv, def{name: "send_message", title: "Send a message",
		desc:  "Send a message to an identity (its sub) or to whoever holds a node (node:<id>).",
		hints: additive, from: []string{"MessageCreate"}}, s.sendMessage)
}

// childSchema is NodeCreate's schema with parent required.
func childSchema() *jsonschema.Schema {
	sc := inputSchema[client.NodeCreate]("NodeCreate")
	sc.Required = append(sc.Required, "parent")
	return sc
}

// refused is the tool error of an API call that failed, nil when it
// succeeded.
func refused(resp *http.Response, body []byte) *sdk.CallToolResult {
	if err := client.CheckResponse(resp, body); err != nil {
		return failure(err)
	}
	return nil
}

func (s *session) claimNext(ctx context.Context, in claimNextIn) (*claimOut, *sdk.CallToolResult) {
	res, err := s.api.ClaimNextWithResponse(ctx, in.Queue, in.ClaimNextRequest)
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(res.HTTPResponse, res.Body); bad != nil {
		return nil, bad
	}
	if res.JSON200 == nil {
		return emptyClaim(client.ThrottleOf(res.HTTPResponse)), nil
	}
	s.hold(res.JSON200.Node.ID, res.JSON200.Lease)
	return briefClaim(*res.JSON200), nil
}

func (s *session) renew(ctx context.Context, in renewIn) (*leaseAnswer, *sdk.CallToolResult) {
	s.fill(in.NodeID, fenced{&in.Fence, &in.Session})
	res, err := s.api.RenewLeaseWithResponse(ctx, in.NodeID, in.RenewRequest)
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(res.HTTPResponse, res.Body); bad != nil {
		return nil, bad
	}
	// A lease renewed by hand is kept from now on, even one this session
	// did not claim. (A refused renewal changes nothing here: when the kept
	// lease is gone, its keeper learns so on its next renewal.)
	if _, ok := s.lease(in.NodeID); !ok {
		s.hold(in.NodeID, res.JSON200.Lease)
	}
	r := res.JSON200
	return &leaseAnswer{NodeID: in.NodeID, Status: string(r.Status), Lease: briefLease(r.Lease, true),
		InboxUnread: r.InboxUnread, Next: withInbox(nextAfterRenew, r.InboxUnread)}, nil
}

func (s *session) progress(ctx context.Context, in progressIn) (*leaseAnswer, *sdk.CallToolResult) {
	s.fill(in.NodeID, fenced{&in.Fence, &in.Session})
	res, err := s.api.ReportProgressWithResponse(ctx, in.NodeID, in.ProgressRequest)
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(res.HTTPResponse, res.Body); bad != nil {
		return nil, bad
	}
	r := res.JSON200
	_, kept := s.lease(in.NodeID)
	return &leaseAnswer{NodeID: in.NodeID, Status: string(r.Status), Lease: briefLease(r.Lease, kept),
		InboxUnread: r.InboxUnread, Next: withInbox(nextAfterRenew, r.InboxUnread)}, nil
}

// withInbox adds to next a call to read unread messages.
func withInbox(next string, unread int64) string {
	if unread > 0 {
		return "You have unread messages: call inbox with unread: true, they may change your task. " + next
	}
	return next
}

// ending runs call, which ends the lease on nodeID, with the session's
// keeper stopped (so that no renewal races it). Unless the call succeeded,
// the keeper starts again with the latest lease: a refused call (a bad
// input, a stale fence the agent passed, a network error) need not have
// ended the lease the session keeps, and when it did, the keeper's first
// renewal learns so and forgets the lease.
func (s *session) ending(nodeID string, call func() (*http.Response, []byte, error)) *sdk.CallToolResult {
	held, ok := s.unhold(nodeID)
	var bad *sdk.CallToolResult
	if resp, body, err := call(); err != nil {
		bad = failure(err)
	} else {
		bad = refused(resp, body)
	}
	if bad != nil && ok {
		s.hold(nodeID, held)
	}
	return bad
}

func (s *session) complete(ctx context.Context, in completeIn) (*completeOut, *sdk.CallToolResult) {
	_, kept := s.lease(in.NodeID)
	s.fill(in.NodeID, fenced{&in.Fence, &in.Session})
	// A node this session does not hold may be done already (a completion
	// retried, or someone else's): the API answers a repeated completion as
	// it answered the first, so look first to be able to say so.
	alreadyDone := false
	if !kept {
		if res, err := s.api.GetNodeWithResponse(ctx, in.NodeID); err == nil && res.JSON200 != nil {
			alreadyDone = res.JSON200.Status == client.NodeStatusDone
		}
	}
	var done *client.CompleteResponse
	bad := s.ending(in.NodeID, func() (*http.Response, []byte, error) {
		res, err := s.api.CompleteNodeWithResponse(ctx, in.NodeID, in.CompleteRequest)
		if err != nil {
			return nil, nil, err
		}
		done = res.JSON200
		// The next node claimed in the same call is kept as claim_next's is.
		if done != nil && done.Next != nil {
			s.hold(done.Next.Node.ID, done.Next.Lease)
		}
		return res.HTTPResponse, res.Body, nil
	})
	if bad != nil {
		return nil, bad
	}
	out := &completeOut{NodeID: in.NodeID, Status: string(done.Status), AlreadyDone: alreadyDone, Next: nextAfterEnd}
	if alreadyDone {
		out.Next = nextAlreadyEnd
	}
	switch {
	case done.Next != nil:
		out.Claimed = briefClaim(*done.Next)
		out.Next = "Your next node is claimed (claimed.node): " + nextAfterClaim
	case in.Next != nil:
		out.Claimed = &claimOut{Claimed: false, Next: nextEmptyQueue}
		out.Next = nextEmptyQueue
	}
	return out, nil
}

func (s *session) fail(ctx context.Context, in failIn) (*endOut, *sdk.CallToolResult) {
	s.fill(in.NodeID, fenced{&in.Fence, &in.Session})
	var ans *client.NodeAnswer
	bad := s.ending(in.NodeID, func() (*http.Response, []byte, error) {
		res, err := s.api.FailNodeWithResponse(ctx, in.NodeID, in.FailRequest)
		if err != nil {
			return nil, nil, err
		}
		ans = res.JSON200
		return res.HTTPResponse, res.Body, nil
	})
	if bad != nil {
		return nil, bad
	}
	return &endOut{NodeID: in.NodeID, Status: string(ans.Status), Attempts: ans.Node.Attempts,
		MaxAttempts: ans.Node.MaxAttempts, Next: nextAfterEnd}, nil
}

func (s *session) release(ctx context.Context, in releaseIn) (*endOut, *sdk.CallToolResult) {
	s.fill(in.NodeID, fenced{&in.Fence, &in.Session})
	var ans *client.ReleaseResponse
	bad := s.ending(in.NodeID, func() (*http.Response, []byte, error) {
		res, err := s.api.ReleaseNodeWithResponse(ctx, in.NodeID, in.ReleaseRequest)
		if err != nil {
			return nil, nil, err
		}
		ans = res.JSON200
		return res.HTTPResponse, res.Body, nil
	})
	if bad != nil {
		return nil, bad
	}
	return &endOut{NodeID: in.NodeID, Status: string(ans.Status), Next: nextAfterEnd}, nil
}

func (s *session) comment(ctx context.Context, in commentIn) (*commentOut, *sdk.CallToolResult) {
	res, err := s.api.CreateCommentWithResponse(ctx, in.NodeID, in.CommentCreate)
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(res.HTTPResponse, res.Body); bad != nil {
		return nil, bad
	}
	return &commentOut{ID: res.JSON201.ID, NodeID: in.NodeID, Next: nextAfterNote}, nil
}

func (s *session) createNode(ctx context.Context, in client.NodeCreate) (*nodeAnswer, *sdk.CallToolResult) {
	res, err := s.api.CreateNodeWithResponse(ctx, nil, in)
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(res.HTTPResponse, res.Body); bad != nil {
		return nil, bad
	}
	made := res.JSON201
	if made == nil { // 200: its unique.key named a node; nothing was made
		made = res.JSON200
	}
	out := &nodeAnswer{Node: briefNode(*made), Next: nextAfterMade, DuplicateOf: deref(made.DuplicateOf)}
	if out.Node.Queue == "" {
		out.Next = nextAfterOpen
	}
	return out, nil
}

func (s *session) createChild(ctx context.Context, in client.NodeCreate) (*nodeAnswer, *sdk.CallToolResult) {
	if in.Parent == nil || *in.Parent == "" {
		return nil, badInput("parent", "parent is required: the id of the node the new node is a child of")
	}
	return s.createNode(ctx, in)
}

func (s *session) getNode(ctx context.Context, in nodeIn) (*nodeAnswer, *sdk.CallToolResult) {
	res, err := s.api.GetNodeWithResponse(ctx, in.NodeID)
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(res.HTTPResponse, res.Body); bad != nil {
		return nil, bad
	}
	n := res.JSON200
	out := &nodeAnswer{Node: briefNode(*n), Next: nextAfterRead}
	if n.Lease != nil {
		_, kept := s.lease(n.ID)
		l := briefLease(*n.Lease, kept)
		out.Lease = &l
	}
	return out, nil
}

func (s *session) history(ctx context.Context, in historyIn) (*historyOut, *sdk.CallToolResult) {
	res, err := s.api.ListNodeEventsWithResponse(ctx, in.NodeID, &in.ListNodeEventsParams)
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(res.HTTPResponse, res.Body); bad != nil {
		return nil, bad
	}
	out := &historyOut{Events: []eventOut{}, NextCursor: deref(res.JSON200.NextCursor), Next: nextHistory}
	for _, ev := range res.JSON200.Items {
		out.Events = append(out.Events, eventOut{Seq: ev.Seq, Type: string(ev.Type), At: ev.At, By: ev.By, Data: ev.Data})
	}
	return out, nil
}

func (s *session) inbox(ctx context.Context, in client.ListInboxParams) (*inboxOut, *sdk.CallToolResult) {
	res, err := s.api.ListInboxWithResponse(ctx, &in)
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(res.HTTPResponse, res.Body); bad != nil {
		return nil, bad
	}
	out := &inboxOut{Messages: []messageOut{}, NextCursor: deref(res.JSON200.NextCursor), Next: nextInbox}
	for _, m := range res.JSON200.Items {
		out.Messages = append(out.Messages, messageOut{
			ID: m.ID, From: m.From, To: m.To, Body: m.Body, NodeID: deref(m.NodeID), Thread: deref(m.Thread),
			Priority: m.Priority, SentAt: m.CreatedAt, Read: m.ReadAt != nil,
		})
	}
	return out, nil
}

func (s *session) sendMessage(ctx context.Context, in client.MessageCreate) (*sentOut, *sdk.CallToolResult) {
	res, err := s.api.SendMessageWithResponse(ctx, in)
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(res.HTTPResponse, res.Body); bad != nil {
		return nil, bad
	}
	return &sentOut{ID: res.JSON201.ID, To: res.JSON201.To, Next: nextAfterSend}, nil
}
