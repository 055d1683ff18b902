package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/apitest"
)

// bearer adds a token to every request of the SDK's HTTP client.
type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// streamable connects the SDK's client to the server's /mcp with tok.
func (e *env) streamable(tok string) *sdk.ClientSession {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	e.t.Cleanup(cancel)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok}}, MaxRetries: -1,
	}, nil)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// rawMCP sends one request to /mcp through a transport that validates it and
// its answer against the spec, and returns the status and the problem's code
// ("" when the answer is not a problem).
func (e *env) rawMCP(method, tok, session, body string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+"/mcp", strings.NewReader(body))
	require.NoError(e.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	hc := &http.Client{Transport: apitest.ValidatingTransport(e.t, nil), Timeout: 10 * time.Second}
	resp, err := hc.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Content-Type") != "application/problem+json" {
		return resp.StatusCode, ""
	}
	var p struct{ Code string }
	require.NoError(e.t, json.Unmarshal(b, &p), string(b))
	return resp.StatusCode, p.Code
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

func TestHTTPRefusesWithoutAToken(t *testing.T) {
	t.Parallel()
	e := start(t)
	for _, tok := range []string{"", "not-a-token"} {
		status, code := e.rawMCP(http.MethodPost, tok, "", initialize)
		require.Equal(t, http.StatusUnauthorized, status)
		require.Equal(t, "unauthorized", code)
	}

	// The SDK's client gets no session either.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", MaxRetries: -1}, nil)
	require.Error(t, err)
}

func TestHTTPToolsActAsTheCaller(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.queued("h-1", "q")
	tok := e.token("agent-h")
	cs := e.streamable(tok)

	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 17)
	for _, tool := range tools.Tools {
		if tool.Name == "claim_next" {
			schema, err := json.Marshal(tool.InputSchema)
			require.NoError(t, err)
			for _, field := range []string{`"queue"`, `"ttl_ms"`, `"wait_ms"`, `"types"`, `"labels"`, `"session"`} {
				require.Contains(t, string(schema), field)
			}
			// The members are described in the spec's words.
			require.Contains(t, string(schema), "Long poll up to this long for a node to become ready.")
		}
		if tool.Name == "inbox" {
			schema, err := json.Marshal(tool.InputSchema)
			require.NoError(t, err)
			require.Contains(t, string(schema), "Only messages not yet read (default false).")
		}
	}

	claim := ok(t, call(t, cs, "claim_next", map[string]any{"queue": "q"}))
	lease := claim["lease"].(map[string]any)
	require.Equal(t, "agent-h", lease["holder"], "the tools act as the token's identity")

	ok(t, call(t, cs, "comment", map[string]any{"node_id": "h-1", "body": "looking into it"}))
	child := ok(t, call(t, cs, "create_child", map[string]any{"parent": "h-1", "type": "subtask", "title": "a part"}))
	require.Equal(t, "h-1", child["node"].(map[string]any)["parent"])
	toolError(t, call(t, cs, "create_child", map[string]any{"type": "subtask"}), 400, "bad_request")
	ok(t, call(t, cs, "send_message", map[string]any{"to": "agent-h", "body": "note to self"}))
	inbox := ok(t, call(t, cs, "inbox", map[string]any{"unread": true}))
	require.Len(t, inbox["messages"], 1)
	history := ok(t, call(t, cs, "history", map[string]any{"node_id": "h-1"}))
	require.NotEmpty(t, history["events"])
	done := ok(t, call(t, cs, "complete", map[string]any{"node_id": "h-1", "result": "fixed"}))
	require.Equal(t, "done", done["status"])
	toolError(t, call(t, cs, "get_node", map[string]any{"node_id": "no-such-node"}), 404, "not_found")

	// Resources: the guide, a node, a queue's stats.
	ctx := context.Background()
	skill, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "tether://skill.md"})
	require.NoError(t, err)
	require.Contains(t, skill.Contents[0].Text, "claim")
	node, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "tether://nodes/h-1"})
	require.NoError(t, err)
	require.Contains(t, node.Contents[0].Text, `"status":"done"`)
	queue, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "tether://queues/q"})
	require.NoError(t, err)
	var q struct {
		Queue  string
		Counts map[string]int64
	}
	require.NoError(t, json.Unmarshal([]byte(queue.Contents[0].Text), &q))
	require.Equal(t, "q", q.Queue)
	require.EqualValues(t, 1, q.Counts["done"])
	_, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "tether://nodes/no-such-node"})
	require.Error(t, err)

	// The session is bound to its caller: another identity cannot use it
	// (nor learn that it exists: TestHTTPSessionOfAnotherIdentityIsNotFound).
	// The transport's refusals are problems, as the spec says.
	list := `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
	status, code := e.rawMCP(http.MethodPost, e.token("intruder"), cs.ID(), list)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "not_found", code)
	status, code = e.rawMCP(http.MethodPost, tok, "no-such-session", list)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "not_found", code)
	status, code = e.rawMCP(http.MethodGet, tok, "", "")
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "bad_request", code)

	// DELETE ends the session; the caller's next request for it is a 404.
	status, _ = e.rawMCP(http.MethodDelete, tok, cs.ID(), "")
	require.Equal(t, http.StatusNoContent, status)
	status, code = e.rawMCP(http.MethodPost, tok, cs.ID(), list)
	require.Equal(t, http.StatusNotFound, status, code)
}

// A session left open (its event stream too) with a kept lease does not
// hold up the server's shutdown, and its client learns the session is over.
func TestHTTPShutdownEndsSessions(t *testing.T) {
	t.Parallel()
	e := open(t)
	e.queued("s-1", "q")
	cs := e.streamable(e.token("agent-s"))
	ok(t, call(t, cs, "claim_next", map[string]any{"queue": "q"}))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.srv.Shutdown(ctx))
	require.NoError(t, ctx.Err(), "shutdown waited for the MCP session")

	callCtx, callCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer callCancel()
	_, err := cs.CallTool(callCtx, &sdk.CallToolParams{Name: "get_node", Arguments: map[string]any{"node_id": "s-1"}})
	require.Error(t, err)
}
