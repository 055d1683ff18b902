package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// "." and ".." are no node's id: a URL parser resolves them as dot segments,
// so a node named so could not be addressed, and a client that sent one
// unescaped would reach another route. They are refused wherever an id is
// given, and a path that names one (escaped, or not resolved on the way)
// reaches the node's route and is refused there rather than resolved.
func TestDotSegmentsAreNoNodeIDs(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.mustCreate(task("events"))
	head := e.token("acme", "head", "dispatcher")
	for _, id := range []string{".", ".."} {
		for name, req := range map[string]struct{ path, body string }{
			"create":       {"/v1/nodes", `{"id":"` + id + `","type":"task"}`},
			"batch create": {"/v1/nodes/batch", `{"items":[{"id":"ok-` + id + `","type":"task"},{"id":"` + id + `","type":"task"}]}`},
			"batch op":     {"/v1/batch", `{"ops":[{"op":"renew","id":"` + id + `"}]}`},
			"edge":         {"/v1/edges", `{"from":"events","type":"relates_to","to":"` + id + `"}`},
			"parent":       {"/v1/nodes", `{"type":"task","parent":"` + id + `"}`},
			"depends_on":   {"/v1/nodes", `{"type":"task","depends_on":["` + id + `"]}`},
		} {
			resp, b := e.raw(http.MethodPost, req.path, head, "application/json", req.body)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s %q: %s", name, id, b)
			require.Contains(t, string(b), `"code":"bad_request"`, name)
		}
	}
	for _, path := range []string{
		"/v1/nodes/%2E", "/v1/nodes/%2E%2E", "/v1/nodes/%2e%2e/events", "/v1/nodes/%2E/events",
		"/v1/nodes/../events", "/v1/nodes/./events",
	} {
		resp, b := e.raw(http.MethodGet, path, head, "", "")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", path, b)
	}
	resp, b := e.raw(http.MethodGet, "/v1/nodes?limit=10", head, "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var list struct{ Items []struct{ ID string } }
	require.NoError(t, json.Unmarshal(b, &list))
	require.Len(t, list.Items, 1, "a refused request created nothing: %s", b)
}
