package main

// End-to-end test of `tether mcp`: the MCP SDK's own client launches the
// real binary over stdio against a real `tether serve`.

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tether-run/tether/client"
)

// mcpSession launches `tether mcp` for tok against srv and connects the SDK's
// client to it; closed in t.Cleanup (closing stdin ends the process).
func mcpSession(t *testing.T, srv *proc, tok string) (*sdk.ClientSession, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(tetherBin, "mcp")
	cmd.Env = append(baseEnv(), "TETHER_URL="+srv.url, "TETHER_TOKEN="+tok)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c := sdk.NewClient(&sdk.Implementation{Name: "mcp-test", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("error connecting to tether mcp: %v\nstderr:\n%s", err, stderr)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("tether mcp stderr:\n%s", stderr)
		}
	})
	return cs, stderr
}

// call calls a tool; a protocol error fails the test (a tool error does not).
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

// structured decodes a result's structured content into v.
func structured(t *testing.T, res *sdk.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("error encoding the structured content: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("error decoding the structured content %s: %v", b, err)
	}
}

func mustOK(t *testing.T, name string, res *sdk.CallToolResult) {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s: tool error: %v", name, text(res))
	}
}

func text(res *sdk.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}

func createQueued(t *testing.T, c *client.ClientWithResponses, id, queue string) {
	t.Helper()
	res, err := c.CreateNodeWithResponse(context.Background(), nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr(queue)})
	if err != nil || res.JSON201 == nil {
		t.Fatalf("error creating %s: %v %s", id, err, res.Body)
	}
}

// liveLease is the lease on id as GET /v1/leases shows it (ok false: none).
func liveLease(t *testing.T, c *client.ClientWithResponses, id string) (client.Lease, bool) {
	t.Helper()
	res, err := c.ListLeasesWithResponse(context.Background(), &client.ListLeasesParams{})
	if err != nil || res.JSON200 == nil {
		t.Fatalf("error listing leases: %v", err)
	}
	for _, l := range res.JSON200.Items {
		if l.NodeID == id {
			return l, true
		}
	}
	return client.Lease{}, false
}

func TestMCPStdioClaimRenewComplete(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "server", t.TempDir())
	hc := httpClient(t)
	head := srv.as(hc, mint(t, "head", "dispatcher"))
	createQueued(t, head, "mcp-1", "agents")
	cs, _ := mcpSession(t, srv, mint(t, "agent-1"))

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("error listing tools: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"claim_next", "renew", "progress", "complete", "fail", "release", "comment",
		"create_child", "get_node", "history", "inbox", "send_message", "create_node", "list_nodes", "list_queues", "wait_for"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s is missing from %v", want, names)
		}
	}

	// A short TTL: the lease outlives it only because the server renews it.
	const ttl = 1500 * time.Millisecond
	res := call(t, cs, "claim_next", map[string]any{"queue": "agents", "ttl_ms": ttl.Milliseconds()})
	mustOK(t, "claim_next", res)
	var claim claimAnswer
	structured(t, res, &claim)
	if claim.Node.ID != "mcp-1" || claim.Lease.Holder != "agent-1" {
		t.Fatalf("claimed %s as %s, want mcp-1 as agent-1", claim.Node.ID, claim.Lease.Holder)
	}

	// The agent "thinks" past the lease's TTL; the keeper renews meanwhile.
	deadline := claim.Lease.ExpiresAt.Add(ttl / 2)
	for time.Now().Before(deadline) {
		if _, ok := liveLease(t, head, "mcp-1"); !ok {
			t.Fatalf("the lease lapsed while the agent was thinking")
		}
		time.Sleep(50 * time.Millisecond)
	}
	l, ok := liveLease(t, head, "mcp-1")
	if !ok || l.Fence != claim.Lease.Fence || !l.ExpiresAt.After(claim.Lease.ExpiresAt) {
		t.Fatalf("lease after its first TTL: %+v (live %v), want fence %d renewed past %s", l, ok, claim.Lease.Fence, claim.Lease.ExpiresAt)
	}

	res = call(t, cs, "renew", map[string]any{"node_id": "mcp-1"}) // fence from the session
	mustOK(t, "renew", res)
	res = call(t, cs, "progress", map[string]any{"node_id": "mcp-1", "message": "halfway", "pct": 50})
	mustOK(t, "progress", res)
	res = call(t, cs, "complete", map[string]any{"node_id": "mcp-1", "result": map[string]any{"answer": 42}})
	mustOK(t, "complete", res)
	node, err := head.GetNodeWithResponse(context.Background(), "mcp-1")
	if err != nil || node.JSON200 == nil || node.JSON200.Status != client.NodeStatusDone {
		t.Fatalf("node after complete: %v %s", err, node.Body)
	}

	// Completing a node another agent holds is a 409: a tool error with the
	// problem's code and a hint, and the session goes on.
	createQueued(t, head, "mcp-2", "others")
	other := srv.as(hc, mint(t, "agent-2"))
	if res, err := other.ClaimNodeWithResponse(context.Background(), "mcp-2", client.ClaimRequest{}); err != nil || res.JSON200 == nil {
		t.Fatalf("agent-2 could not claim mcp-2: %v %s", err, res.Body)
	}
	res = call(t, cs, "complete", map[string]any{"node_id": "mcp-2"})
	if !res.IsError {
		t.Fatalf("completing another agent's node succeeded: %s", text(res))
	}
	var te struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
		Hint   string `json:"hint"`
	}
	structured(t, res, &te)
	t.Logf("the 409 as the agent reads it: %s", text(res))
	if te.Status != 409 || (te.Code != "conflict" && te.Code != "lease_lost") || te.Hint == "" {
		t.Fatalf("tool error %+v, want a 409 with a code and a hint", te)
	}
	res = call(t, cs, "get_node", map[string]any{"node_id": "mcp-1"})
	mustOK(t, "get_node after a tool error", res)
}

// claimAnswer is claim_next's compact answer, as an agent reads it.
type claimAnswer struct {
	Claimed bool `json:"claimed"`
	Node    struct {
		ID string `json:"id"`
	} `json:"node"`
	Lease struct {
		Fence     int64     `json:"fence"`
		Holder    string    `json:"holder"`
		ExpiresAt time.Time `json:"expires_at"`
	} `json:"lease"`
}

// When the session ends (the agent's client exits), the leases it kept are
// no longer renewed: they lapse at their expiry and the node goes back to
// its queue.
func TestMCPStdioSessionEndStopsRenewing(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "server", t.TempDir())
	hc := httpClient(t)
	head := srv.as(hc, mint(t, "head", "dispatcher"))
	createQueued(t, head, "mcp-end", "agents")
	cs, _ := mcpSession(t, srv, mint(t, "agent-1"))

	res := call(t, cs, "claim_next", map[string]any{"queue": "other-empty-queue"})
	mustOK(t, "claim_next on an empty queue", res)
	var empty claimAnswer
	structured(t, res, &empty)
	if empty.Claimed {
		t.Fatalf("claim_next on an empty queue: %s", text(res))
	}

	res = call(t, cs, "claim_next", map[string]any{"queue": "agents", "ttl_ms": 600})
	mustOK(t, "claim_next", res)
	var claim claimAnswer
	structured(t, res, &claim)
	if err := cs.Close(); err != nil {
		t.Logf("closing the session: %v", err)
	}
	deadline := claim.Lease.ExpiresAt.Add(5 * time.Second)
	for {
		node, err := head.GetNodeWithResponse(context.Background(), "mcp-end")
		if err != nil || node.JSON200 == nil {
			t.Fatalf("error reading the node: %v", err)
		}
		if node.JSON200.Status == client.NodeStatusQueued {
			return // the lease lapsed and the reaper requeued the node
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node is still %s well after its lease's expiry: something still renews it", node.JSON200.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The README's MCP client configuration works as written: an MCP client
// that launches what it says (with the real URL and token) gets the tools.
func TestMCPReadmeConfig(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatalf("error reading the README: %v", err)
	}
	_, section, found := strings.Cut(string(readme), "## Agents: MCP\n")
	_, block, found2 := strings.Cut(section, "```json\n")
	block, _, found3 := strings.Cut(block, "```")
	if !found || !found2 || !found3 {
		t.Fatalf("the README has no JSON block under \"## Agents: MCP\"")
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(block), &cfg); err != nil {
		t.Fatalf("the README's MCP configuration is not JSON: %v", err)
	}
	entry, ok := cfg.MCPServers["tether"]
	if !ok || entry.Command != "tether" {
		t.Fatalf("the README's MCP configuration does not launch tether: %+v", cfg)
	}
	srv := startServer(t, "server", t.TempDir())
	cmd := exec.Command(tetherBin, entry.Args...)
	cmd.Env = baseEnv()
	for k := range entry.Env {
		switch k {
		case "TETHER_URL":
			cmd.Env = append(cmd.Env, k+"="+srv.url)
		case "TETHER_TOKEN":
			cmd.Env = append(cmd.Env, k+"="+mint(t, "agent-readme"))
		default:
			t.Fatalf("the README's MCP configuration sets %s, which this test does not know", k)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "readme", Version: "0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("error connecting as the README says: %v", err)
	}
	defer cs.Close()
	res := call(t, cs, "claim_next", map[string]any{"queue": "empty"})
	mustOK(t, "claim_next", res)
}

// bearerTransport adds a token to every request of the SDK's HTTP client.
type bearerTransport struct{ tok string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// `tether serve` serves /mcp: with a token the SDK's client gets the tools
// and they act as the token's identity; without one it gets no session.
func TestMCPServeStreamableHTTP(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "server", t.TempDir())
	hc := httpClient(t)
	head := srv.as(hc, mint(t, "head", "dispatcher"))
	createQueued(t, head, "mcp-http", "agents")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "mcp-test", Version: "0"}, nil)

	if cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.url + "/mcp", MaxRetries: -1}, nil); err == nil {
		cs.Close()
		t.Fatalf("an MCP session without a token was opened")
	}

	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: srv.url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{mint(t, "agent-http")}}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("error connecting to /mcp: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 17 {
		t.Fatalf("tools over /mcp: %v (%v)", tools, err)
	}
	res := call(t, cs, "claim_next", map[string]any{"queue": "agents"})
	mustOK(t, "claim_next", res)
	var claim claimAnswer
	structured(t, res, &claim)
	if claim.Node.ID != "mcp-http" || claim.Lease.Holder != "agent-http" {
		t.Fatalf("claimed %s as %s over /mcp, want mcp-http as agent-http", claim.Node.ID, claim.Lease.Holder)
	}
	mustOK(t, "complete", call(t, cs, "complete", map[string]any{"node_id": "mcp-http"}))
}
