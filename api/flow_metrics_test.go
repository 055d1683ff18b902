package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/server"
)

// TestFlowMetrics reads flow control back from /metrics: the live leases
// per concurrency key, and the claims held back, by reason; and from the
// queue's throughput, the same throttled claims by the minute.
func TestFlowMetrics(t *testing.T) {
	t.Parallel()
	e := start(t, func(c *server.Config) { c.MetricsTokens = []string{"scrape-secret"} })
	ctx := context.Background()
	scraper, head, alice := e.as("scrape-secret"), e.user("head", "dispatcher"), e.user("alice")
	lim, err := head.PutLimitWithResponse(ctx, "repo:*", client.ConcurrencyLimitPut{MaxRunning: ptr(int64(1))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, lim.StatusCode(), string(lim.Body))
	for _, id := range []string{"f1", "f2"} {
		e.mustCreate(client.NodeCreate{ID: ptr(id), Type: "fix", Queue: ptr("fq"), ConcurrencyKeys: &client.ConcurrencyKeys{"repo:acme/web"}})
	}
	claim := func(want int) {
		t.Helper()
		res, err := alice.ClaimNextWithResponse(ctx, "fq", client.ClaimNextRequest{})
		require.NoError(t, err)
		require.Equal(t, want, res.StatusCode(), string(res.Body))
	}
	claim(http.StatusOK)
	claim(http.StatusNoContent)
	claim(http.StatusNoContent)
	many, err := alice.ClaimNextManyWithResponse(ctx, "fq", client.ClaimManyRequest{Max: ptr(2)})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, many.StatusCode(), string(many.Body))

	res, err := scraper.GetMetricsWithResponse(ctx)
	require.NoError(t, err)
	text := string(res.Body)
	running, ok := metricValue(t, text, "tether_key_running", `tenant="acme"`, `key="repo:acme/web"`)
	require.True(t, ok, "tether_key_running is exported:\n%s", text)
	require.EqualValues(t, 1, running)
	throttled, ok := metricValue(t, text, "tether_claims_throttled_total", `tenant="acme"`, `queue="fq"`, `reason="concurrency_limited"`)
	require.True(t, ok, "tether_claims_throttled_total is exported:\n%s", text)
	require.EqualValues(t, 3, throttled, "two claim-nexts and a claims")

	tp, err := alice.GetQueueThroughputWithResponse(ctx, "fq")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, tp.StatusCode(), string(tp.Body))
	require.EqualValues(t, 3, tp.JSON200.Minutes[len(tp.JSON200.Minutes)-1].Throttled)
}
