package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
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

// readQueue finds the queue among the pages of GET /v1/queues, which list
// every queue of the tenant with its counts by name (there is no per-queue
// read). A queue that
// holds no node and has no settings is not listed, yet it is a queue an
// agent may claim from: it reads as empty. A name no queue may have is not
// found.
func (s *session) readQueue(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	name := strings.TrimPrefix(uri, queuePrefix)
	if !queueName.MatchString(name) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	q, err := s.findQueue(ctx, name)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	return contents(uri, jsonMIMEType, b), nil
}

// queueName is the form of a queue's name (the spec's pattern).
var queueName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

func contents(uri, mime string, b []byte) *sdk.ReadResourceResult {
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: mime, Text: string(b)}}}
}

// findQueue pages GET /v1/queues up to the queue named name: the queue, or
// an empty one when none is listed.
func (s *session) findQueue(ctx context.Context, name string) (client.Queue, error) {
	limit := 1000
	params := client.ListQueuesParams{Limit: &limit}
	for {
		res, err := s.api.ListQueuesWithResponse(ctx, &params)
		if err != nil {
			return client.Queue{}, err
		}
		if err := client.CheckResponse(res.HTTPResponse, res.Body); err != nil {
			return client.Queue{}, err
		}
		for _, listed := range res.JSON200.Items {
			if listed.Queue == name {
				return listed, nil
			}
			if listed.Queue > name {
				return client.Queue{Queue: name, Counts: map[string]int64{}}, nil
			}
		}
		if res.JSON200.NextCursor == nil || *res.JSON200.NextCursor == "" {
			return client.Queue{Queue: name, Counts: map[string]int64{}}, nil
		}
		params.Cursor = res.JSON200.NextCursor
	}
}
