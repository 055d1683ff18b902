package mcp

import (
	"context"
	"fmt"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tether-run/tether/client"
)

// wait_for blocks until a node, or every child of it, has ended. It long
// polls the tenant's event feed (GET /v1/events with wait_ms) from a cursor
// read before the statuses, so that no change after the read is missed, and
// reads the statuses again whenever an event touches a node it waits for.
// It stops at max_wait_ms, or as soon as the call or the session ends (the
// long poll runs under the call's context, which both cancel).

const (
	waitDefault = 60 * time.Second
	waitMax     = 10 * time.Minute
	pollMax     = 60 * time.Second // the API's longest wait_ms
	pageMax     = 1000             // the API's largest page
)

type waitForIn struct {
	NodeID   string `json:"node_id" jsonschema:"The node to wait for (with children: true, the parent whose children to wait for). Required."`
	Children bool   `json:"children,omitempty" jsonschema:"true: wait until every child of node_id has ended (a planner that fanned out work); false or absent: wait for node_id itself."`
	MaxWait  int64  `json:"max_wait_ms,omitempty" jsonschema:"The longest to block, in milliseconds, 1 to 600000 (default 60000). When it passes first the answer says timed_out: true with the statuses so far; call again to keep waiting. Set your MCP client's request timeout above it."`
}

// ended are the statuses a node does not leave.
var ended = map[client.NodeStatus]bool{
	client.NodeStatusDone: true, client.NodeStatusFailed: true, client.NodeStatusDead: true, client.NodeStatusCancelled: true, client.NodeStatusExpired: true,
}

func (s *session) waitFor(ctx context.Context, in waitForIn) (*waitOut, *sdk.CallToolResult) {
	wait := waitDefault
	switch {
	case in.MaxWait < 0 || in.MaxWait > waitMax.Milliseconds():
		return nil, badInput("max_wait_ms", fmt.Sprintf("max_wait_ms must be between 1 and %d", waitMax.Milliseconds()))
	case in.MaxWait > 0:
		wait = time.Duration(in.MaxWait) * time.Millisecond
	}
	deadline := time.Now().Add(wait)
	// The session's end ends the wait as well as the call's.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()

	cursor, bad := s.lastSeq(ctx, in.NodeID)
	if bad != nil {
		return nil, bad
	}
	for {
		nodes, bad := s.watched(ctx, in)
		if bad != nil {
			return nil, bad
		}
		out := waitAnswer(nodes)
		left := time.Until(deadline)
		if out.Ended || left <= 0 {
			out.TimedOut = !out.Ended
			return out, nil
		}
		ids := map[string]bool{in.NodeID: true}
		for _, n := range nodes {
			ids[n.ID] = true
		}
		for touched := false; !touched; {
			left = time.Until(deadline)
			if left <= 0 {
				break
			}
			pollMS := int(min(left, pollMax).Milliseconds())
			after := cursor
			limit := pageMax
			res, err := s.api.ListEventsWithResponse(ctx, &client.ListEventsParams{After: &after, WaitMS: &pollMS, Limit: &limit})
			if err != nil {
				return nil, failure(err)
			}
			if bad := refused(res.HTTPResponse, res.Body); bad != nil {
				return nil, bad
			}
			for _, ev := range res.JSON200.Items {
				touched = touched || ids[ev.NodeID]
				cursor = ev.Seq
			}
		}
	}
}

// watched are the nodes in.NodeID names: itself, or its children.
func (s *session) watched(ctx context.Context, in waitForIn) ([]client.Node, *sdk.CallToolResult) {
	if !in.Children {
		res, err := s.api.GetNodeWithResponse(ctx, in.NodeID)
		if err != nil {
			return nil, failure(err)
		}
		if bad := refused(res.HTTPResponse, res.Body); bad != nil {
			return nil, bad
		}
		return []client.Node{*res.JSON200}, nil
	}
	var nodes []client.Node
	parent, limit := in.NodeID, pageMax
	params := client.ListNodesParams{Parent: &parent, Limit: &limit}
	for {
		res, err := s.api.ListNodesWithResponse(ctx, &params)
		if err != nil {
			return nil, failure(err)
		}
		if bad := refused(res.HTTPResponse, res.Body); bad != nil {
			return nil, bad
		}
		nodes = append(nodes, res.JSON200.Items...)
		if res.JSON200.NextCursor == nil {
			return nodes, nil
		}
		params.Cursor = res.JSON200.NextCursor
	}
}

// lastSeq is the seq of the node's latest event: every later change of the
// node, or of a child (whose parent_of edge is an event of the parent), has
// a greater one. Also a 404 for a node that never was.
func (s *session) lastSeq(ctx context.Context, nodeID string) (int64, *sdk.CallToolResult) {
	var last int64
	limit := pageMax
	for {
		after := last
		res, err := s.api.ListNodeEventsWithResponse(ctx, nodeID, &client.ListNodeEventsParams{After: &after, Limit: &limit})
		if err != nil {
			return 0, failure(err)
		}
		if bad := refused(res.HTTPResponse, res.Body); bad != nil {
			return 0, bad
		}
		if res.JSON200.NextCursor == nil {
			return last, nil
		}
		if last, err = strconv.ParseInt(*res.JSON200.NextCursor, 10, 64); err != nil {
			return 0, failure(err)
		}
	}
}

func waitAnswer(nodes []client.Node) *waitOut {
	out := &waitOut{Ended: true, Counts: map[string]int64{}, Nodes: []nodeRow{}, Next: nextWaitEnded}
	for _, n := range nodes {
		out.Nodes = append(out.Nodes, briefRow(n))
		out.Counts[string(n.Status)]++
		if !ended[n.Status] {
			out.Ended = false
			out.Next = nextWaitAgain
		}
	}
	return out
}
