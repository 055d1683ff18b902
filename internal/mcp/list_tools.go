package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tether-run/tether/client"
)

// list_nodes and list_queues: what a planner reads to decide what to do.

func (s *session) listNodes(ctx context.Context, in client.ListNodesParams) (*listNodesOut, *sdk.CallToolResult) {
	res, err := s.api.ListNodesWithResponse(ctx, &in)
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(res.HTTPResponse, res.Body); bad != nil {
		return nil, bad
	}
	out := &listNodesOut{Nodes: []nodeRow{}, NextCursor: deref(res.JSON200.NextCursor), Next: nextNodesLast}
	for _, n := range res.JSON200.Items {
		out.Nodes = append(out.Nodes, briefRow(n))
	}
	if out.NextCursor != "" {
		out.Next = nextNodesMore
	}
	return out, nil
}

// listQueues answers one page of queues, so that a tenant of many queues
// never hands a model more than a page.
func (s *session) listQueues(ctx context.Context, in client.ListQueuesParams) (*queuesOut, *sdk.CallToolResult) {
	res, err := s.api.ListQueuesWithResponse(ctx, &in)
	if err != nil {
		return nil, failure(err)
	}
	if bad := refused(res.HTTPResponse, res.Body); bad != nil {
		return nil, bad
	}
	out := &queuesOut{Queues: []queueOut{}, NextCursor: deref(res.JSON200.NextCursor), Next: nextQueues}
	for _, q := range res.JSON200.Items {
		out.Queues = append(out.Queues, briefQueue(q))
	}
	if out.NextCursor != "" {
		out.Next = nextQueuesMore
	}
	return out, nil
}

func briefQueue(q client.Queue) queueOut {
	counts := q.Counts
	if counts == nil {
		counts = map[string]int64{}
	}
	return queueOut{Queue: q.Queue, Counts: counts, Ready: q.Ready, Paused: q.Paused, MaxRunning: q.MaxRunning, OldestReadyAt: q.OldestReadyAt}
}
