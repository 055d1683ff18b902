package mcp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/mcp"
)

// When flow control holds a queue's ready nodes back, claim_next says which
// key, why and when to come back, and list_limits shows the limit with what
// runs under it and the budget with its spend.
func TestClaimNextSaysWhyItWasThrottled(t *testing.T) {
	t.Parallel()
	e := start(t)
	head := e.as(e.token("head", "dispatcher"))
	ctx := context.Background()
	put, err := head.PutLimitWithResponse(ctx, "repo:*", client.ConcurrencyLimitPut{MaxRunning: ptr(int64(1))})
	require.NoError(t, err)
	require.NotNil(t, put.JSON200, string(put.Body))
	bud, err := head.PutBudgetWithResponse(ctx, "provider:openai", client.BudgetPut{Usage: "tokens", Limit: 1000, WindowMS: 3600000})
	require.NoError(t, err)
	require.NotNil(t, bud.JSON200, string(bud.Body))
	for _, id := range []string{"fix-web", "lint-web"} {
		res, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "fix", Queue: ptr("fixes"),
			ConcurrencyKeys: &client.ConcurrencyKeys{"repo:acme/web", "provider:openai"}})
		require.NoError(t, err)
		require.NotNil(t, res.JSON201, string(res.Body))
	}

	cs := e.stdio(e.token("agent-f"), mcp.Options{})
	c := outputSchemas(t, cs)
	first := ok(t, c.call(t, cs, "claim_next", map[string]any{"queue": "fixes"}))
	require.Equal(t, "fix-web", first["node"].(map[string]any)["id"])
	ok(t, c.call(t, cs, "progress", map[string]any{"node_id": "fix-web", "usage": map[string]any{"tokens": 250}}))

	held := ok(t, c.call(t, cs, "claim_next", map[string]any{"queue": "fixes"}))
	require.Equal(t, false, held["claimed"])
	th := held["throttled"].(map[string]any)
	require.Equal(t, "repo:acme/web", th["key"])
	require.Equal(t, "concurrency_limited", th["reason"])
	require.Contains(t, th, "retry_after_ms")
	require.Contains(t, held["next"], "list_limits")

	empty := ok(t, c.call(t, cs, "claim_next", map[string]any{"queue": "empty"}))
	require.NotContains(t, empty, "throttled", "an empty queue is not a throttle")

	lim := ok(t, c.call(t, cs, "list_limits", map[string]any{}))
	limits := lim["limits"].([]any)
	require.Len(t, limits, 1)
	l := limits[0].(map[string]any)
	require.Equal(t, "repo:*", l["key"])
	require.EqualValues(t, 1, l["max_running"])
	require.EqualValues(t, 1, l["running"])
	budgets := lim["budgets"].([]any)
	require.Len(t, budgets, 1)
	b := budgets[0].(map[string]any)
	require.Equal(t, "provider:openai", b["key"])
	require.EqualValues(t, 250, b["spent"])
	require.Equal(t, false, b["exhausted"])
}

func ptr[T any](v T) *T { return &v }
