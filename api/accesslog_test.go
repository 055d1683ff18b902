package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/internal/server"
)

func TestParseAccessLog(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]api.AccessLog{
		"off":        {Off: true},
		"errors":     {},
		"all":        {Every: 1},
		"sample:1":   {Every: 1},
		"sample:100": {Every: 100},
		" ALL ":      {Every: 1},
	} {
		got, err := api.ParseAccessLog(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		again, err := api.ParseAccessLog(got.String())
		require.NoError(t, err, got.String())
		require.Equal(t, got, again, "String reads back")
	}
	for _, in := range []string{"", "on", "sample", "sample:", "sample:0", "sample:-3", "sample:x", "errors:2"} {
		_, err := api.ParseAccessLog(in)
		require.Error(t, err, in)
	}
	require.Equal(t, "errors", api.AccessLog{}.String(), "the zero value logs the errors")
}

// logLines is a log destination that keeps every access log line.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// requests returns the access log lines written so far.
func (l *logLines) requests(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

// startLogged starts a server whose log, in JSON, goes to the returned lines.
func startLogged(t *testing.T, setting string) (*env, *logLines) {
	t.Helper()
	lines := &logLines{}
	a, err := api.ParseAccessLog(setting)
	require.NoError(t, err)
	e := start(t, func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(lines, nil))
		c.AccessLog = a
	})
	return e, lines
}

func TestAccessLogErrorsOnly(t *testing.T) {
	t.Parallel()
	e, lines := startLogged(t, "errors")
	tok := e.token("acme", "alice", "worker")

	resp, _ := e.raw(http.MethodGet, "/health", "", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = e.raw(http.MethodGet, "/v1/nodes", tok, "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, lines.requests(t), "a success is not logged")

	missing, _ := e.raw(http.MethodGet, "/v1/nodes/nope", tok, "", "")
	require.Equal(t, http.StatusNotFound, missing.StatusCode)
	anonymous, _ := e.raw(http.MethodGet, "/v1/nodes", "", "", "")
	require.Equal(t, http.StatusUnauthorized, anonymous.StatusCode)
	e.srv.API.SetReady(false)
	unready, _ := e.raw(http.MethodGet, "/ready", "", "", "")
	require.Equal(t, http.StatusServiceUnavailable, unready.StatusCode)
	e.srv.API.SetReady(true)

	got := lines.requests(t)
	require.Len(t, got, 3)
	require.Equal(t, map[string]any{
		"level": "WARN", "msg": "request", "method": "GET", "route": "/v1/nodes/:id", "path": "/v1/nodes/nope",
		"status": float64(404), "request_id": missing.Header.Get("X-Request-Id"), "tenant": "acme", "sub": "alice",
	}, without(got[0], "time", "ms"))
	require.Equal(t, "WARN", got[1]["level"])
	require.Equal(t, float64(401), got[1]["status"])
	require.Equal(t, anonymous.Header.Get("X-Request-Id"), got[1]["request_id"])
	require.NotContains(t, got[1], "tenant", "nobody was authenticated")
	require.Equal(t, "ERROR", got[2]["level"])
	require.Equal(t, float64(503), got[2]["status"])
	require.Equal(t, "/ready", got[2]["route"])
}

func TestAccessLogAll(t *testing.T) {
	t.Parallel()
	e, lines := startLogged(t, "all")
	resp, _ := e.rawWithHeaders(http.MethodGet, "/health", "", "", map[string]string{"X-Request-Id": "probe-1"})
	require.Equal(t, "probe-1", resp.Header.Get("X-Request-Id"))
	got := lines.requests(t)
	require.Len(t, got, 1)
	require.Equal(t, "INFO", got[0]["level"])
	require.Equal(t, "probe-1", got[0]["request_id"])
	require.Equal(t, float64(200), got[0]["status"])
	require.Contains(t, got[0], "ms")
}

// TestAccessLogMadeUpMethod: the method is the client's to make up, and a
// 100 KiB one would make a 100 KiB line; it is logged as "other", as the
// metrics count it.
func TestAccessLogMadeUpMethod(t *testing.T) {
	t.Parallel()
	e, lines := startLogged(t, "all")
	st, _, _ := get(t, strings.Repeat("X", 100<<10), e.url+"/v1/nodes", "")
	require.NotZero(t, st)
	got := lines.requests(t)
	require.Len(t, got, 1)
	require.Equal(t, "other", got[0]["method"])
}

func TestAccessLogSample(t *testing.T) {
	t.Parallel()
	e, lines := startLogged(t, "sample:4")
	for range 12 {
		resp, _ := e.raw(http.MethodGet, "/health", "", "", "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	require.Len(t, lines.requests(t), 3, "one in four successes")
	for range 2 {
		resp, _ := e.raw(http.MethodGet, "/v1/nodes", "", "", "")
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	require.Len(t, lines.requests(t), 5, "every error")
}

func TestAccessLogOff(t *testing.T) {
	t.Parallel()
	e, lines := startLogged(t, "off")
	resp, _ := e.raw(http.MethodGet, "/v1/nodes", "", "", "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("X-Request-Id"), "request ids do not depend on the access log")
	require.Empty(t, lines.requests(t))
	// Metrics still count every request.
	_, body := e.raw(http.MethodGet, "/metrics", "", "", "")
	require.Contains(t, string(body), `tether_http_requests_total{code="401",method="GET",route="/v1/nodes"} 1`)
}

// The log level drops access log lines below it like any other line.
func TestAccessLogFollowsLogLevel(t *testing.T) {
	t.Parallel()
	lines := &logLines{}
	e := start(t, func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(lines, &slog.HandlerOptions{Level: slog.LevelError}))
		c.AccessLog = api.AccessLog{Every: 1}
	})
	e.raw(http.MethodGet, "/health", "", "", "")
	e.raw(http.MethodGet, "/v1/nodes", "", "", "")
	require.Empty(t, lines.requests(t), "INFO and WARN lines are below ERROR")
}

func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// A client that stops waiting (a long poll it cancels) is logged and counted
// as 499, not as a server error: the errors setting logs nothing of it.
func TestAccessLogClientGone(t *testing.T) {
	t.Parallel()
	for _, setting := range []string{"errors", "all"} {
		e, lines := startLogged(t, setting)
		signals := &e.srv.API.TestSignals
		signals.Waiting.Init(t)
		signals.Served.Init(t)
		tok := e.token("acme", "alice", "worker")
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/v1/queues/q/claim", strings.NewReader(`{"wait_ms": 60000}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		done := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		// The client goes once the server holds the poll (not once the
		// client has written it: the transport's WroteRequest comes before
		// its buffer is flushed, so a cancel then could keep the request
		// from ever reaching the server).
		signals.Waiting.WaitFor(t, func(sub string) bool { return sub == "alice" })
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		// The server sees the client gone whenever it gets there; Served
		// says it has counted and logged the request.
		served := signals.Served.WaitFor(t, func(s api.Served) bool { return s.Route == "/v1/queues/:queue/claim" })
		require.Equal(t, api.StatusClientGone, served.Status)
		_, body := e.raw(http.MethodGet, "/metrics", "", "", "")
		require.Contains(t, string(body), `tether_http_requests_total{code="499",method="POST",route="/v1/queues/:queue/claim"} 1`,
			"the cancelled poll is counted as 499")
		got := lines.requests(t)
		var polls []map[string]any
		for _, l := range got {
			if l["route"] == "/v1/queues/:queue/claim" {
				polls = append(polls, l)
			}
		}
		if setting == "errors" {
			require.Empty(t, polls, "a client that went away is not a server error")
			continue
		}
		require.Len(t, polls, 1)
		require.Equal(t, "INFO", polls[0]["level"])
		require.Equal(t, float64(api.StatusClientGone), polls[0]["status"])
	}
}
