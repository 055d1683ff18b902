package mcp_test

import (
	"context"
	"encoding/json"
	"net"
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
	"github.com/tether-run/tether/mcp"
	"github.com/tether-run/tether/server"
	"github.com/tether-run/tether/tenant"
)

const testSecret = "mcp-test-secret-0123456789abcdef0123456789"

// env is a real server (a store in a temp dir, a fake clock, a free port).
type env struct {
	t   *testing.T
	srv *server.Server
	url string
	clk *clocktest.Fake
}

func start(t *testing.T) *env {
	t.Helper()
	e := open(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, e.srv.Shutdown(ctx))
	})
	return e
}

// open starts a server that the test shuts down itself.
func open(t *testing.T) *env { return openWith(t, settings{}) }

// settings are what a test changes of open's server.
type settings struct {
	mcp   mcp.HTTPOptions
	waits api.WaitLimits
}

// startWith starts a server with set, shut down when the test ends.
func startWith(t *testing.T, set settings) *env {
	t.Helper()
	e := openWith(t, set)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, e.srv.Shutdown(ctx))
	})
	return e
}

func openWith(t *testing.T, set settings) *env {
	t.Helper()
	clk := clocktest.New(time.Now().UTC().Truncate(time.Millisecond))
	srv, err := server.Open(context.Background(), server.Config{
		DataDir: t.TempDir(), Clock: clk, ReaperInterval: time.Hour,
		Tenant: tenant.Config{
			JWTSecrets: []string{testSecret}, TTLCeilingMS: 86400000,
			Defaults: tenant.Policy{ClaimTTLDefaultMS: 300000, ClaimTTLMaxMS: 7200000, MaxAttemptsDefault: 5},
		},
		Waits: set.waits,
		MCP:   func(h http.Handler) server.MCPHandler { return mcp.NewHandler(h, set.mcp) },
	})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	return &env{t: t, srv: srv, url: "http://" + ln.Addr().String(), clk: clk}
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
	c, err := client.NewClientWithResponses(e.url, client.WithHTTPClient(hc), client.WithBearerToken(tok))
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
