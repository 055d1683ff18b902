package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/apitest"
	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/mcp"
	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/testserver"
)

const testSecret = testserver.Secret

// env is a real server (internal/testserver: a store in a temp dir, a fake
// clock, a free port) serving /mcp.
type env struct {
	t   *testing.T
	srv *server.Server
	url string
	clk *clocktest.Fake
}

// start starts a server shut down when the test ends.
func start(t *testing.T) *env { return startWith(t, settings{}) }

// open starts a server that the test shuts down itself.
func open(t *testing.T) *env { return envOf(t, testserver.Open(t, set(settings{}))) }

// settings are what a test changes of the server.
type settings struct {
	mcp   mcp.HTTPOptions
	waits api.WaitLimits
}

// startWith starts a server with s, shut down when the test ends.
func startWith(t *testing.T, s settings) *env {
	t.Helper()
	return envOf(t, testserver.Start(t, set(s)))
}

// set is the test server's configuration for s: the MCP handler at /mcp,
// the server's default body limit, and a reaper that leaves expiries to the
// fake clock's reads.
func set(s settings) testserver.Option {
	return func(cfg *server.Config) {
		cfg.ReaperInterval = time.Hour
		cfg.MaxBodyBytes = 0
		cfg.Waits = s.waits
		cfg.MCP = func(h http.Handler) server.MCPHandler { return mcp.NewHandler(h, s.mcp) }
	}
}

func envOf(t *testing.T, s *testserver.Server) *env {
	return &env{t: t, srv: s.Server, url: s.URL, clk: s.Clock}
}

func (e *env) token(sub string, roles ...string) string {
	e.t.Helper()
	claims := jwt.MapClaims{"sub": sub, "tid": "acme", "exp": e.clk.Now().Add(time.Hour).Unix()}
	if len(roles) > 0 {
		claims["roles"] = roles
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(testSecret))
	require.NoError(e.t, err)
	return tok
}

// as is a generated client for tok whose every response is validated
// against the spec.
func (e *env) as(tok string) *client.ClientWithResponses {
	e.t.Helper()
	hc := &http.Client{Transport: apitest.ValidatingTransport(e.t, nil), Timeout: 30 * time.Second}
	c, err := client.NewClientWithResponses(e.url, client.WithHTTPClient(hc), client.WithBearerToken(tok), client.WithoutRetries())
	require.NoError(e.t, err)
	return c
}

func (e *env) queued(id, queue string) {
	e.t.Helper()
	q := queue
	res, err := e.as(e.token("head", "dispatcher")).CreateNodeWithResponse(context.Background(), nil,
		client.NodeCreate{ID: &id, Type: "task", Queue: &q})
	require.NoError(e.t, err)
	require.NotNil(e.t, res.JSON201, string(res.Body))
}

// stdio connects the SDK's client to mcp.Serve over in-memory transports
// (the transport `tether mcp` uses is stdio; cmd/tether tests that one).
func (e *env) stdio(tok string, opts mcp.Options) *sdk.ClientSession {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ct, st := sdk.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- mcp.Serve(ctx, e.as(tok), st, opts) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	require.NoError(e.t, err)
	e.t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-done
	})
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "%s: a protocol error", name)
	return res
}

func ok(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	require.False(t, res.IsError, "a tool error: %v", res.Content)
	return structured(t, res)
}

func structured(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), string(b))
	return m
}

// toolError checks res is a tool error with status and code and a hint.
func toolError(t *testing.T, res *sdk.CallToolResult, status int, code string) map[string]any {
	t.Helper()
	require.True(t, res.IsError, "want a tool error, got %v", res.Content)
	m := structured(t, res)
	require.EqualValues(t, status, m["status"], m)
	require.Equal(t, code, m["code"], m)
	require.NotEmpty(t, m["hint"], m)
	return m
}
