package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// TestWrongMethodIs405WithAllow: a path that exists under other methods
// answers 405 with Allow naming them, on every route; an unknown path is
// still 404.
func TestWrongMethodIs405WithAllow(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("acme", "alice")
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodGet, "/v1/nodes/x/claim", "POST"},
		{http.MethodPut, "/v1/nodes/x", "DELETE, GET, PATCH"},
		{http.MethodGet, "/v1/queues/default/claim", "POST"},
		{http.MethodPost, "/v1/tenant", "GET"},
		{http.MethodGet, "/v1/edges", "DELETE, POST"},
	} {
		resp, body := e.raw(c.method, c.path, tok, "", "")
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s %s: %s", c.method, c.path, body)
		require.Equal(t, c.allow, resp.Header.Get("Allow"), "%s %s", c.method, c.path)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		p := client.ProblemFrom(resp, body)
		require.Equal(t, http.StatusMethodNotAllowed, p.Status)
	}
	resp, _ := e.raw(http.MethodGet, "/v1/nodes/a/b/c", tok, "", "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = e.raw(http.MethodDelete, "/health", "", "", "")
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.True(t, strings.Contains(resp.Header.Get("Allow"), "GET"), resp.Header.Get("Allow"))
}
