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
	Queue string `json:"queue" jsonschema:"the queue to claim from"`
	client.ClaimNextRequest
}

type nodeIn struct {
	NodeID string `json:"node_id" jsonschema:"the node's id"`
}

type renewIn struct {
	NodeID string `json:"node_id" jsonschema:"the node whose lease to renew"`
	client.RenewRequest
}

type progressIn struct {
	NodeID string `json:"node_id" jsonschema:"the node you hold"`
	client.ProgressRequest
}

type completeIn struct {
	NodeID string `json:"node_id" jsonschema:"the node you hold"`
	client.CompleteRequest
}

type failIn struct {
	NodeID string `json:"node_id" jsonschema:"the node you hold"`
	client.FailRequest
}

type releaseIn struct {
	NodeID string `json:"node_id" jsonschema:"the node you hold"`
	client.ReleaseRequest
}

type commentIn struct {
	NodeID string `json:"node_id" jsonschema:"the node to comment on"`
	client.CommentCreate
}

type historyIn struct {
	NodeID string `json:"node_id" jsonschema:"the node whose events to list"`
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

// tool registers a tool whose input is In, described by the spec's request
// schemas or operations from (see inputSchema).
func tool[In any](srv *sdk.Server, name, desc string, h func(context.Context, In) *sdk.CallToolResult, from ...string) {
	sdk.AddTool(srv, &sdk.Tool{Name: name, Description: desc, InputSchema: inputSchema[In](from...)},
		func(ctx context.Context, _ *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
			if bad := badPathArg(in); bad != nil {
				return bad, nil, nil
			}
			return h(ctx, in), nil, nil
		})
}

func (s *session) addTools(srv *sdk.Server) {
	tool(srv, "claim_next", "Claim the next ready node of a queue (long poll up to wait_ms). "+
		"Returns the node and its lease (fence). While you hold the lease, this MCP server renews it for you "+
		"until you call complete, fail or release, or the session ends: think as long as you need. "+
		"An empty queue answers claimed: false.", s.claimNext, "ClaimNextRequest")
	tool(srv, "renew", "Renew your lease on a node now (the server also renews it for you). "+
		"fence and session default to the lease this session holds.", s.renew, "RenewRequest")
	tool(srv, "progress", "Report progress on a node you hold (message, pct 0-100, usage counters); also renews the lease.", s.progress, "ProgressRequest")
	tool(srv, "complete", "Complete a node you hold, with an optional JSON result. Ends the lease. "+
		"With next ({\"queue\": ...} and claim_next's other fields) the same call claims your next node of that queue: "+
		"the answer's next is that claim, kept for you as claim_next's is, or null when none was ready.", s.complete, "CompleteRequest")
	tool(srv, "fail", "Fail a run of a node you hold, saying why (error). It is retried while attempts remain unless requeue is false. Ends the lease.", s.fail, "FailRequest")
	tool(srv, "release", "Give a node you hold back to its queue without spending an attempt, or hand it to another identity (to). Ends the lease.", s.release, "ReleaseRequest")
	tool(srv, "comment", "Leave a note on a node, for people and other agents.", s.comment, "CommentCreate")
	sdk.AddTool(srv, &sdk.Tool{
		Name:        "create_child",
		Description: "Create a node as a child of another (parent is required; type too). With a queue it is queued for work; depends_on makes it wait for other nodes.",
		InputSchema: childSchema(),
	}, func(ctx context.Context, _ *sdk.CallToolRequest, in client.NodeCreate) (*sdk.CallToolResult, any, error) {
		return s.createChild(ctx, in), nil, nil
	})
	tool(srv, "get_node", "Read a node: its status, props, body, result, lease holder and attempts.", s.getNode)
	tool(srv, "history", "List a node's events (created, claimed, progress, released, completed, failed, ...), oldest first; page with after.", s.history, "GET /v1/nodes/{id}/events")
	tool(srv, "inbox", "List the messages sent to you (or to a node you hold): unread=true for new ones; wait_ms long polls.", s.inbox, "GET /v1/inbox")
	tool(srv, "send_message", "Send a message to an identity (its sub) or to whoever holds a node (node:<id>).", s.sendMessage, "MessageCreate")
}

// childSchema is NodeCreate's schema with parent required.
func childSchema() *jsonschema.Schema {
	sc := inputSchema[client.NodeCreate]("NodeCreate")
	sc.Required = append(sc.Required, "parent")
	return sc
}

func (s *session) claimNext(ctx context.Context, in claimNextIn) *sdk.CallToolResult {
	res, err := s.api.ClaimNextWithResponse(ctx, in.Queue, in.ClaimNextRequest)
	if err != nil {
		return failure(err)
	}
	if res.StatusCode() == http.StatusNoContent {
		return success([]byte(`{"claimed":false}`))
	}
	if res.JSON200 != nil {
		s.hold(res.JSON200.Node.ID, res.JSON200.Lease)
	}
	return answer(res.HTTPResponse, res.Body)
}

func (s *session) renew(ctx context.Context, in renewIn) *sdk.CallToolResult {
	s.fill(in.NodeID, fenced{&in.Fence, &in.Session})
	res, err := s.api.RenewLeaseWithResponse(ctx, in.NodeID, in.RenewRequest)
	if err != nil {
		return failure(err)
	}
	// A lease renewed by hand is kept from now on, even one this session
	// did not claim. (A refused renewal changes nothing here: when the kept
	// lease is gone, its keeper learns so on its next renewal.)
	if res.JSON200 != nil {
		if _, ok := s.lease(in.NodeID); !ok {
			s.hold(in.NodeID, res.JSON200.Lease)
		}
	}
	return answer(res.HTTPResponse, res.Body)
}

func (s *session) progress(ctx context.Context, in progressIn) *sdk.CallToolResult {
	s.fill(in.NodeID, fenced{&in.Fence, &in.Session})
	res, err := s.api.ReportProgressWithResponse(ctx, in.NodeID, in.ProgressRequest)
	if err != nil {
		return failure(err)
	}
	return answer(res.HTTPResponse, res.Body)
}

// ending runs call, which ends the lease on nodeID, with the session's
// keeper stopped (so that no renewal races it). Unless the call succeeded,
// the keeper starts again with the latest lease: a refused call (a bad
// input, a stale fence the agent passed, a network error) need not have
// ended the lease the session keeps, and when it did, the keeper's first
// renewal learns so and forgets the lease.
func (s *session) ending(nodeID string, call func() (*http.Response, []byte, error)) *sdk.CallToolResult {
	lease, held := s.unhold(nodeID)
	resp, b, err := call()
	if err != nil || resp.StatusCode >= 300 {
		if held {
			s.hold(nodeID, lease)
		}
		if err != nil {
			return failure(err)
		}
	}
	return answer(resp, b)
}

func (s *session) complete(ctx context.Context, in completeIn) *sdk.CallToolResult {
	s.fill(in.NodeID, fenced{&in.Fence, &in.Session})
	return s.ending(in.NodeID, func() (*http.Response, []byte, error) {
		res, err := s.api.CompleteNodeWithResponse(ctx, in.NodeID, in.CompleteRequest)
		if err != nil {
			return nil, nil, err
		}
		// The next node claimed in the same call is kept as claim_next's is.
		if res.JSON200 != nil && res.JSON200.Next != nil {
			s.hold(res.JSON200.Next.Node.ID, res.JSON200.Next.Lease)
		}
		return res.HTTPResponse, res.Body, nil
	})
}

func (s *session) fail(ctx context.Context, in failIn) *sdk.CallToolResult {
	s.fill(in.NodeID, fenced{&in.Fence, &in.Session})
	return s.ending(in.NodeID, func() (*http.Response, []byte, error) {
		res, err := s.api.FailNodeWithResponse(ctx, in.NodeID, in.FailRequest)
		if err != nil {
			return nil, nil, err
		}
		return res.HTTPResponse, res.Body, nil
	})
}

func (s *session) release(ctx context.Context, in releaseIn) *sdk.CallToolResult {
	s.fill(in.NodeID, fenced{&in.Fence, &in.Session})
	return s.ending(in.NodeID, func() (*http.Response, []byte, error) {
		res, err := s.api.ReleaseNodeWithResponse(ctx, in.NodeID, in.ReleaseRequest)
		if err != nil {
			return nil, nil, err
		}
		return res.HTTPResponse, res.Body, nil
	})
}

func (s *session) comment(ctx context.Context, in commentIn) *sdk.CallToolResult {
	res, err := s.api.CreateCommentWithResponse(ctx, in.NodeID, in.CommentCreate)
	if err != nil {
		return failure(err)
	}
	return answer(res.HTTPResponse, res.Body)
}

func (s *session) createChild(ctx context.Context, in client.NodeCreate) *sdk.CallToolResult {
	if in.Parent == nil || *in.Parent == "" {
		return badInput("parent", "parent is required: the id of the node the new node is a child of")
	}
	res, err := s.api.CreateNodeWithResponse(ctx, nil, in)
	if err != nil {
		return failure(err)
	}
	return answer(res.HTTPResponse, res.Body)
}

func (s *session) getNode(ctx context.Context, in nodeIn) *sdk.CallToolResult {
	res, err := s.api.GetNodeWithResponse(ctx, in.NodeID)
	if err != nil {
		return failure(err)
	}
	return answer(res.HTTPResponse, res.Body)
}

func (s *session) history(ctx context.Context, in historyIn) *sdk.CallToolResult {
	res, err := s.api.ListNodeEventsWithResponse(ctx, in.NodeID, &in.ListNodeEventsParams)
	if err != nil {
		return failure(err)
	}
	return answer(res.HTTPResponse, res.Body)
}

func (s *session) inbox(ctx context.Context, in client.ListInboxParams) *sdk.CallToolResult {
	res, err := s.api.ListInboxWithResponse(ctx, &in)
	if err != nil {
		return failure(err)
	}
	return answer(res.HTTPResponse, res.Body)
}

func (s *session) sendMessage(ctx context.Context, in client.MessageCreate) *sdk.CallToolResult {
	res, err := s.api.SendMessageWithResponse(ctx, in)
	if err != nil {
		return failure(err)
	}
	return answer(res.HTTPResponse, res.Body)
}
