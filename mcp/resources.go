package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tether-run/tether/client"
)

const (
	skillURI     = "tether://skill.md"
	nodeURIs     = "tether://nodes/{id}"
	queueURIs    = "tether://queues/{queue}"
	nodePrefix   = "tether://nodes/"
	queuePrefix  = "tether://queues/"
	jsonMIMEType = "application/json"
)

func (s *session) addResources(srv *sdk.Server) {
	srv.AddResource(&sdk.Resource{
		URI: skillURI, Name: "skill.md", MIMEType: "text/markdown",
		Description: "How an agent works with Tether: claiming, leases and fences, progress, children, messages.",
	}, s.readSkill)
	srv.AddResourceTemplate(&sdk.ResourceTemplate{
		URITemplate: nodeURIs, Name: "node", MIMEType: jsonMIMEType,
		Description: "A node, as GET /v1/nodes/{id} returns it.",
	}, s.readNode)
	srv.AddResourceTemplate(&sdk.ResourceTemplate{
		URITemplate: queueURIs, Name: "queue", MIMEType: jsonMIMEType,
		Description: "A queue's stats: counts by status, ready, paused, max_running, oldest_ready_at (an item of GET /v1/queues).",
	}, s.readQueue)
}

func (s *session) readSkill(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	res, err := s.api.GetSkillWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if err := client.CheckResponse(res.HTTPResponse, res.Body); err != nil {
		return nil, err
	}
	return contents(req.Params.URI, "text/markdown", res.Body), nil
}

func (s *session) readNode(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	id := strings.TrimPrefix(uri, nodePrefix)
	if id == "" || id == "." || id == ".." || strings.Contains(id, "/") {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	res, err := s.api.GetNodeWithResponse(ctx, id)
	if err != nil {
		return nil, err
	}
	if res.StatusCode() == http.StatusNotFound {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if err := client.CheckResponse(res.HTTPResponse, res.Body); err != nil {
		return nil, err
	}
	return contents(uri, jsonMIMEType, res.Body), nil
}

// readQueue finds the queue among GET /v1/queues, which lists every queue
// of the tenant with its counts (there is no per-queue read).
func (s *session) readQueue(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	name := strings.TrimPrefix(uri, queuePrefix)
	res, err := s.api.ListQueuesWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if err := client.CheckResponse(res.HTTPResponse, res.Body); err != nil {
		return nil, err
	}
	if res.JSON200 != nil {
		for _, q := range res.JSON200.Items {
			if q.Queue == name {
				b, err := json.Marshal(q)
				if err != nil {
					return nil, err
				}
				return contents(uri, jsonMIMEType, b), nil
			}
		}
	}
	return nil, sdk.ResourceNotFoundError(uri)
}

func contents(uri, mime string, b []byte) *sdk.ReadResourceResult {
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: mime, Text: string(b)}}}
}
