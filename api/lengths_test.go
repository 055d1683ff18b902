package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNameLengthLimits: ids, types, queue names, labels, edge types, worker
// names, targets and tenant ids are accepted at their documented maximum
// and refused one character past it.
func TestNameLengthLimits(t *testing.T) {
	t.Parallel()
	e := start(t)
	d, w := e.token("acme", "head", "dispatcher"), e.token("acme", "w1", "worker")
	name := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		field string
		max   int
		send  func(v string) int
	}{
		{"id", 128, func(v string) int { st, _ := post(e, d, "/v1/nodes", `{"type":"t","id":"`+v+`"}`); return st }},
		{"type", 64, func(v string) int { st, _ := post(e, d, "/v1/nodes", `{"type":"`+v+`"}`); return st }},
		{"queue", 128, func(v string) int { st, _ := post(e, d, "/v1/nodes", `{"type":"t","queue":"`+v+`"}`); return st }},
		{"labels[0]", 128, func(v string) int { st, _ := post(e, d, "/v1/nodes", `{"type":"t","labels":["`+v+`"]}`); return st }},
		{"target", 200, func(v string) int { st, _ := post(e, d, "/v1/nodes", `{"type":"t","target":"`+v+`"}`); return st }},
		{"queue (path)", 128, func(v string) int { st, _ := post(e, w, "/v1/queues/"+v+"/claim", `{}`); return st }},
		{"type (edge)", 64, func(v string) int {
			post(e, d, "/v1/nodes", `{"type":"t","id":"from"}`)
			post(e, d, "/v1/nodes", `{"type":"t","id":"to"}`)
			st, _ := post(e, d, "/v1/edges", `{"from":"from","type":"`+v+`","to":"to"}`)
			return st
		}},
		{"worker", 128, func(v string) int {
			st, _ := post(e, w, "/v1/workers/heartbeat", `{"worker":"`+v+`","status":"idle"}`)
			return st
		}},
	} {
		require.NotEqual(t, http.StatusBadRequest, tc.send(name(tc.max)), "%s at its maximum of %d", tc.field, tc.max)
		require.Equal(t, http.StatusBadRequest, tc.send(name(tc.max+1)), "%s one past its maximum of %d", tc.field, tc.max)
	}
	// A tenant id is at most 63 characters.
	resp, b := e.raw(http.MethodGet, "/v1/tenant", e.token(name(63), "u", "reader"), "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	resp, b = e.raw(http.MethodGet, "/v1/tenant", e.token(name(64), "u", "reader"), "", "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, string(b))
}
