package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/queuemetrics"
	"github.com/tether-run/tether/internal/server"
)

// TestQueueMetrics drives one queue through a claim, a completion, a failure
// into the dead letters and an expiry, on the fake clock, and reads every
// per-queue series back from /metrics.
func TestQueueMetrics(t *testing.T) {
	t.Parallel()
	e := start(t, func(c *server.Config) { c.MetricsTokens = []string{"scrape-secret"} })
	ctx := context.Background()
	scraper, alice := e.as("scrape-secret"), e.user("alice")
	scrape := func() string {
		t.Helper()
		res, err := scraper.GetMetricsWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		return string(res.Body)
	}
	value := func(text, name string, labels ...string) float64 {
		t.Helper()
		v, ok := metricValue(t, text, name, append([]string{`tenant="acme"`, `queue="mq"`}, labels...)...)
		require.True(t, ok, "%s %v is exported:\n%s", name, labels, text)
		return v
	}
	for _, id := range []string{"q1", "q2", "q3"} {
		e.mustCreate(client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("mq"), MaxAttempts: ptr(int64(1))})
	}
	e.clk.Advance(4 * time.Second)
	text := scrape()
	require.EqualValues(t, 3, value(text, "tether_queue_depth", `status="queued"`))
	require.EqualValues(t, 4, value(text, "tether_queue_oldest_ready_age_seconds"), "the oldest ready node is 4 s old on the fake clock")

	claim := func(ttlMS int64) string {
		t.Helper()
		res, err := alice.ClaimNextWithResponse(ctx, "mq", client.ClaimNextRequest{TTLMS: ptr(ttlMS)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		return res.JSON200.Node.ID
	}
	first := claim(60000)
	e.clk.Advance(3 * time.Second)
	done, err := alice.CompleteNodeWithResponse(ctx, first, client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))

	second := claim(60000)
	failed, err := alice.FailNodeWithResponse(ctx, second, client.FailRequest{Error: "boom"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, failed.StatusCode(), string(failed.Body))

	third := claim(5000)
	e.advanceAndReap(5 * time.Second)
	require.Equal(t, client.NodeStatusDead, e.node(third).Status, "the reaper ends the expired lease, out of attempts")

	// The counters move once each transaction is durable, on the store's
	// queue meter hook, which has no signal: the answers above may come
	// first.
	require.Eventually(t, func() bool {
		v, ok := metricValue(t, scrape(), "tether_queue_expiries_total", `tenant="acme"`, `queue="mq"`)
		return ok && v == 1
	}, 5*time.Second, 5*time.Millisecond)
	text = scrape()
	require.EqualValues(t, 1, value(text, "tether_queue_completions_total"))
	require.EqualValues(t, 1, value(text, "tether_queue_failures_total"))
	require.EqualValues(t, 2, value(text, "tether_queue_dead_total"), "the failure and the expiry, each out of its one attempt")
	require.EqualValues(t, 1, value(text, "tether_queue_depth", `status="done"`))
	require.EqualValues(t, 2, value(text, "tether_queue_depth", `status="dead"`))
	require.EqualValues(t, 0, value(text, "tether_queue_oldest_ready_age_seconds"), "nothing is ready")
	require.EqualValues(t, 3, value(text, "tether_queue_claim_wait_seconds_count"))
	// q1 waited 4 s, the others 7 s; they ran 3, 0 and 5 s.
	require.EqualValues(t, 18, value(text, "tether_queue_claim_wait_seconds_sum"))
	require.EqualValues(t, 1, value(text, "tether_queue_claim_wait_seconds_bucket", `le="5"`))
	require.EqualValues(t, 3, value(text, "tether_queue_run_seconds_count"))
	require.EqualValues(t, 8, value(text, "tether_queue_run_seconds_sum"))
}

// TestQueueMetricsCardinalityCap: past the caps, tenants and queues share
// the "other" label value, and the depths of the queues in it add up.
func TestQueueMetricsCardinalityCap(t *testing.T) {
	t.Parallel()
	e := start(t, func(c *server.Config) {
		c.QueueMetrics = queuemetrics.Limits{MaxTenants: 1, MaxQueues: 2}
		c.OperatorTokens = []string{"op-secret"}
	})
	ctx := context.Background()
	for _, q := range []string{"a", "b", "c", "d"} {
		e.mustCreate(client.NodeCreate{Type: "task", Queue: ptr(q)})
	}
	globex := e.as(e.token("globex", "disp", "dispatcher"))
	res, err := globex.CreateNodeWithResponse(ctx, nil, client.NodeCreate{Type: "task", Queue: ptr("a")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))

	m, err := e.as("op-secret").GetMetricsWithResponse(ctx)
	require.NoError(t, err)
	text := string(m.Body)
	var own, other float64
	for _, q := range []string{"a", "b", "c", "d"} {
		if v, ok := metricValue(t, text, "tether_queue_depth", `tenant="acme"`, `queue="`+q+`"`, `status="queued"`); ok {
			own += v
		}
	}
	v, ok := metricValue(t, text, "tether_queue_depth", `tenant="acme"`, `queue="other"`, `status="queued"`)
	require.True(t, ok, "acme's queues past the cap are counted under other:\n%s", text)
	other = v
	require.EqualValues(t, 2, own, "two queues keep labels of their own")
	require.EqualValues(t, 2, other, "the other two add up under other")
	v, ok = metricValue(t, text, "tether_queue_depth", `tenant="other"`, `queue="other"`, `status="queued"`)
	require.True(t, ok, "a second tenant past a cap of one is other:\n%s", text)
	require.EqualValues(t, 1, v)
	_, ok = metricValue(t, text, "tether_queue_depth", `tenant="globex"`)
	require.False(t, ok, "globex gets no label value of its own")
}
