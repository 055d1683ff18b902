package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/internal/apitest"
	"github.com/tether-run/tether/internal/mcp"
)

// reply is what /mcp answered a raw request.
type reply struct {
	status  int
	code    string // the problem's; "" when the answer is not a problem
	detail  string
	session string // the Mcp-Session-Id the answer named
}

// mcpRequest is a raw request to /mcp as tok, for session when not "".
func (e *env) mcpRequest(method, tok, session, body string) *http.Request {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+"/mcp", strings.NewReader(body))
	require.NoError(e.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	return req
}

// do sends req through a transport that validates the answer against the
// spec, and reads the whole answer.
func (e *env) do(req *http.Request) reply {
	e.t.Helper()
	hc := &http.Client{Transport: apitest.ValidatingTransport(e.t, nil), Timeout: 10 * time.Second}
	resp, err := hc.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	r := reply{status: resp.StatusCode, session: resp.Header.Get("Mcp-Session-Id")}
	if resp.Header.Get("Content-Type") == "application/problem+json" {
		var p struct{ Code, Detail string }
		require.NoError(e.t, json.Unmarshal(b, &p), string(b))
		r.code, r.detail = p.Code, p.Detail
	}
	return r
}

// initialized opens a session as tok with raw requests and returns its id.
func (e *env) initialized(tok string) string {
	e.t.Helper()
	r := e.do(e.mcpRequest(http.MethodPost, tok, "", initialize))
	require.Equal(e.t, http.StatusOK, r.status, r)
	require.NotEmpty(e.t, r.session)
	n := e.do(e.mcpRequest(http.MethodPost, tok, r.session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	require.Equal(e.t, http.StatusAccepted, n.status, n)
	return r.session
}

// stream opens session's standalone stream as tok and returns its status,
// and the problem when it was refused. An open stream stays open until the
// test ends.
func (e *env) stream(tok, session string) reply {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req := e.mcpRequest(http.MethodGet, tok, session, "").WithContext(ctx)
	// Not the validating transport: it reads an answer to its end, and a
	// stream has none.
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	if resp.StatusCode == http.StatusOK {
		e.t.Cleanup(func() {
			cancel()
			resp.Body.Close()
		})
		require.Equal(e.t, "text/event-stream", resp.Header.Get("Content-Type"))
		return reply{status: http.StatusOK}
	}
	defer cancel()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	var p struct{ Code, Detail string }
	require.NoError(e.t, json.Unmarshal(b, &p), string(b))
	return reply{status: resp.StatusCode, code: p.Code, detail: p.Detail}
}

// A browser page of another origin cannot drive an agent's session (the
// MCP spec: a streamable HTTP server must validate Origin). Requests
// without an Origin (agents, the CLI) and from the server's own origin
// pass.
func TestHTTPRefusesOtherOrigins(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("agent-o")
	host := strings.TrimPrefix(e.url, "http://")
	for _, origin := range []string{
		"http://evil.example", "null", "http://127.0.0.1.evil.example",
		"https://" + host,      // another scheme is another origin
		"http://" + host + "0", // another port
		"http://localhost" + host[strings.LastIndex(host, ":"):],
	} {
		req := e.mcpRequest(http.MethodPost, tok, "", initialize)
		req.Header.Set("Origin", origin)
		r := e.do(req)
		require.Equal(t, http.StatusForbidden, r.status, origin)
		require.Equal(t, "forbidden", r.code, origin)
		require.Contains(t, r.detail, `"`+origin+`"`, "the answer names the refused origin")
		require.NotContains(t, r.detail, "another identity")
		require.Empty(t, r.session, "no session for %s", origin)
	}

	// A session's later requests are checked too.
	session := e.initialized(tok)
	req := e.mcpRequest(http.MethodPost, tok, session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	req.Header.Set("Origin", "http://evil.example")
	require.Equal(t, http.StatusForbidden, e.do(req).status)
	req = e.mcpRequest(http.MethodGet, tok, session, "")
	req.Header.Set("Origin", "http://evil.example")
	require.Equal(t, http.StatusForbidden, e.do(req).status)

	req = e.mcpRequest(http.MethodPost, tok, "", initialize)
	req.Header.Set("Origin", "http://"+host)
	r := e.do(req)
	require.Equal(t, http.StatusOK, r.status, "the server's own origin")
	require.NotEmpty(t, r.session)
}

// A request whose Host is not the loopback name the server listens on is
// refused (DNS rebinding), and the answer says so.
func TestHTTPRefusedHostSaysWhy(t *testing.T) {
	t.Parallel()
	e := start(t)
	req := e.mcpRequest(http.MethodPost, e.token("agent-r"), "", initialize)
	req.Host = "rebound.example"
	r := e.do(req)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, "forbidden", r.code)
	require.Contains(t, r.detail, `"rebound.example"`)
	require.NotContains(t, r.detail, "another identity")
}

// Another identity learns nothing of a session: it gets the answer an id
// that names no session gets.
func TestHTTPSessionOfAnotherIdentityIsNotFound(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("agent-a")
	cs := e.streamable(tok)
	intruder := e.token("intruder")
	list := `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`

	post := e.do(e.mcpRequest(http.MethodPost, intruder, cs.ID(), list))
	require.Equal(t, http.StatusNotFound, post.status)
	require.Equal(t, "not_found", post.code)
	require.Equal(t, post, e.stream(intruder, cs.ID()), "GET")
	require.Equal(t, post, e.do(e.mcpRequest(http.MethodDelete, intruder, cs.ID(), "")), "DELETE")

	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err, "the session lives on for its owner")

	require.Equal(t, http.StatusNoContent, e.do(e.mcpRequest(http.MethodDelete, tok, cs.ID(), "")).status)
	require.Equal(t, post, e.do(e.mcpRequest(http.MethodPost, tok, cs.ID(), list)), "the answer for a session that is no more")
}

// A session has one standalone stream: a second one at once is a conflict
// (409), not a server error.
func TestHTTPSecondStreamIsAConflict(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("agent-c")
	session := e.initialized(tok)
	require.Equal(t, http.StatusOK, e.stream(tok, session).status)
	r := e.stream(tok, session)
	require.Equal(t, http.StatusConflict, r.status, r)
	require.Equal(t, "conflict", r.code)
	require.Contains(t, r.detail, "stream")
}

// A session and its standalone stream each count against the identity's
// cap on long-lived requests (TETHER_MAX_WAITS_PER_IDENTITY), as a long
// poll or an event stream does; past it, 429. Ending a session gives its
// place back at once.
func TestHTTPSessionsAndStreamsCountAsWaits(t *testing.T) {
	t.Parallel()
	e := startWith(t, settings{waits: api.WaitLimits{PerIdentity: 3}})
	tok := e.token("agent-w")
	first := e.initialized(tok)
	require.Equal(t, http.StatusOK, e.stream(tok, first).status)
	second := e.initialized(tok) // the third wait

	r := e.stream(tok, second)
	require.Equal(t, http.StatusTooManyRequests, r.status, r)
	require.Equal(t, "rate_limited", r.code)
	require.Contains(t, r.detail, "TETHER_MAX_WAITS_PER_IDENTITY")
	r = e.do(e.mcpRequest(http.MethodPost, tok, "", initialize))
	require.Equal(t, http.StatusTooManyRequests, r.status, r)
	require.Equal(t, "rate_limited", r.code)
	require.Empty(t, r.session)
	ev, err := http.NewRequest(http.MethodGet, e.url+"/v1/events?wait_ms=1000", nil)
	require.NoError(t, err)
	ev.Header.Set("Authorization", "Bearer "+tok)
	require.Equal(t, http.StatusTooManyRequests, e.do(ev).status, "a long poll meets the same cap")

	require.NotEmpty(t, e.initialized(e.token("agent-x")), "another identity has its own")

	require.Equal(t, http.StatusNoContent, e.do(e.mcpRequest(http.MethodDelete, tok, second, "")).status)
	require.NotEmpty(t, e.initialized(tok))
}

// An origin configured in AllowedOrigins (TETHER_MCP_ALLOWED_ORIGINS) may
// use /mcp, however its scheme and host are spelled; its look-alikes may
// not.
func TestHTTPAllowsConfiguredOrigins(t *testing.T) {
	t.Parallel()
	e := startWith(t, settings{mcp: mcp.HTTPOptions{AllowedOrigins: []string{"https://app.example", "http://LOCALHOST:5173"}}})
	tok := e.token("agent-p")
	for origin, want := range map[string]int{
		"https://app.example":      http.StatusOK,
		"https://app.example:443":  http.StatusOK,
		"HTTPS://App.Example":      http.StatusOK,
		"http://localhost:5173":    http.StatusOK,
		"http://app.example":       http.StatusForbidden,
		"https://app.example.evil": http.StatusForbidden,
		"https://app.example:8443": http.StatusForbidden,
		"http://localhost:5174":    http.StatusForbidden,
	} {
		req := e.mcpRequest(http.MethodPost, tok, "", initialize)
		req.Header.Set("Origin", origin)
		r := e.do(req)
		require.Equal(t, want, r.status, "%s: %v", origin, r)
		require.Equal(t, want == http.StatusOK, r.session != "", origin)
	}
	require.Error(t, mcp.ParseAllowedOrigins([]string{"app.example"}))
	require.Error(t, mcp.ParseAllowedOrigins([]string{"https://app.example/"}))
	require.Error(t, mcp.ParseAllowedOrigins([]string{"null"}))
	require.NoError(t, mcp.ParseAllowedOrigins([]string{"http://[::1]:8080"}))
}

// Sessions are capped per identity and in all; past either cap a new one
// is a 429 naming it, and an ended session's place is free at once.
func TestHTTPSessionsAreCapped(t *testing.T) {
	t.Parallel()
	e := startWith(t, settings{mcp: mcp.HTTPOptions{MaxSessions: 3, MaxSessionsPerIdentity: 2}})
	a, b, c := e.token("agent-1"), e.token("agent-2"), e.token("agent-3")
	a1 := e.initialized(a)
	e.initialized(a)
	r := e.do(e.mcpRequest(http.MethodPost, a, "", initialize))
	require.Equal(t, http.StatusTooManyRequests, r.status, r)
	require.Equal(t, "rate_limited", r.code)
	require.Contains(t, r.detail, "TETHER_MCP_MAX_SESSIONS_PER_IDENTITY")

	// A request that opens no session takes no place.
	for range 2 {
		bad := e.mcpRequest(http.MethodPost, c, "", initialize[:len(initialize)-1])
		require.Equal(t, http.StatusBadRequest, e.do(bad).status)
	}

	e.initialized(b)
	r = e.do(e.mcpRequest(http.MethodPost, c, "", initialize))
	require.Equal(t, http.StatusTooManyRequests, r.status, r)
	require.Contains(t, r.detail, "TETHER_MCP_MAX_SESSIONS")

	require.Equal(t, http.StatusNoContent, e.do(e.mcpRequest(http.MethodDelete, a, a1, "")).status)
	e.initialized(c)
}
