package api_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/queuemetrics"
	"github.com/tether-run/tether/internal/server"
)

// get sends GET url with tok as a bearer token (none when empty) and
// returns the status and body, through no spec validation: the metrics
// listener is not the API.
func get(t *testing.T, method, url, auth string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

// TestMetricsRevealNoTenant: a node of tenant zebra-tenant in queue
// secret-queue-xyz; an anonymous GET /metrics names neither, a metrics or
// operator token's does, and so does the metrics listener. Any other
// credential, the tenant's own included, is refused.
func TestMetricsRevealNoTenant(t *testing.T) {
	t.Parallel()
	e := start(t, func(c *server.Config) {
		c.OperatorTokens = []string{"op-secret"}
		c.MetricsTokens = []string{"scrape-secret"}
	})
	ctx := context.Background()
	zebra := e.token("zebra-tenant", "z", "dispatcher")
	res, err := e.as(zebra).CreateNodeWithResponse(ctx, nil, client.NodeCreate{Type: "task", Queue: ptr("secret-queue-xyz")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))

	scrape := func(tok string) (int, string) {
		t.Helper()
		m, err := e.as(tok).GetMetricsWithResponse(ctx) // validated against the spec
		require.NoError(t, err)
		return m.StatusCode(), string(m.Body)
	}
	st, anon := scrape("")
	require.Equal(t, http.StatusOK, st, anon)
	require.NotContains(t, anon, "zebra-tenant")
	require.NotContains(t, anon, "secret-queue-xyz")
	require.NotContains(t, anon, "tenant=", "no series of an anonymous scrape has a tenant label")
	require.NotContains(t, anon, "tether_queue_")
	for _, name := range []string{"tether_claims_total", "tether_http_requests_total", "tether_store_fsyncs_total", "tether_ready 1", "go_goroutines"} {
		require.Contains(t, anon, name, "the process-wide series stay public")
	}
	for _, tok := range []string{"scrape-secret", "op-secret"} {
		st, all := scrape(tok)
		require.Equal(t, http.StatusOK, st, all)
		require.Contains(t, all, `tether_queue_depth{queue="secret-queue-xyz",status="queued",tenant="zebra-tenant"} 1`)
		require.Contains(t, all, "tether_claims_total", "and every process-wide series")
	}
	for _, auth := range []string{"Bearer " + zebra, "Bearer wrong", "Basic c2NyYXBlOnNlY3JldA==", "Bearer "} {
		st, hdr, body := get(t, http.MethodGet, e.url+"/metrics", auth)
		require.Equal(t, http.StatusUnauthorized, st, auth)
		require.Equal(t, "application/problem+json", hdr.Get("Content-Type"))
		require.Equal(t, `Bearer realm="tether"`, hdr.Get("WWW-Authenticate"))
		require.Contains(t, body, `"code":"unauthorized"`)
		require.Contains(t, body, "TETHER_METRICS_TOKENS")
		require.NotContains(t, body, "zebra-tenant")
	}

	// The metrics listener: every series, no token, and nothing else.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = e.srv.ServeMetrics(ln) }()
	base := "http://" + ln.Addr().String()
	st, _, all := get(t, http.MethodGet, base+"/metrics", "")
	require.Equal(t, http.StatusOK, st, all)
	require.Contains(t, all, `tenant="zebra-tenant"`)
	require.Contains(t, all, `queue="secret-queue-xyz"`)
	st, hdr, body := get(t, http.MethodGet, base+"/v1/nodes", "Bearer "+zebra)
	require.Equal(t, http.StatusNotFound, st, body)
	require.Equal(t, "application/problem+json", hdr.Get("Content-Type"))
	st, hdr, body = get(t, http.MethodPost, base+"/metrics", "")
	require.Equal(t, http.StatusMethodNotAllowed, st, body)
	require.Equal(t, http.MethodGet, hdr.Get("Allow"))
	require.Contains(t, body, `"code":"bad_request"`)
}

// TestMetricsMethodLabelBounded: made-up methods, a long one among them,
// all count under one method label, so no request grows /metrics for good.
func TestMetricsMethodLabelBounded(t *testing.T) {
	t.Parallel()
	e := start(t)
	scrape := func() string {
		t.Helper()
		st, _, body := get(t, http.MethodGet, e.url+"/metrics", "")
		require.Equal(t, http.StatusOK, st, body)
		return body
	}
	send := func(method string) {
		t.Helper()
		st, _, _ := get(t, method, e.url+"/v1/nodes", "")
		require.NotZero(t, st)
	}
	send("BREW") // the first made-up method makes the "other" series
	before := scrape()
	long := strings.Repeat("X", 100<<10)
	for i := range 300 {
		send("M" + strings.Repeat("Q", i%50) + string(rune('A'+i%26)))
	}
	send(long)
	after := scrape()
	require.NotContains(t, after, "BREW")
	require.NotContains(t, after, "XXXXXXXX")
	n, ok := metricValue(t, after, "tether_http_requests_total", `method="other"`, `route="/v1/*"`)
	require.True(t, ok, "made-up methods count under other:\n%s", after)
	require.GreaterOrEqual(t, n, float64(302))
	methods := map[string]bool{}
	for line := range strings.SplitSeq(after, "\n") {
		if _, rest, ok := strings.Cut(line, `method="`); ok && strings.HasPrefix(line, "tether_http_") {
			m, _, _ := strings.Cut(rest, `"`)
			methods[m] = true
		}
	}
	for m := range methods {
		require.Contains(t, []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "other"}, m)
	}
	t.Logf("/metrics: %d bytes before, %d after 302 made-up methods (one of %d bytes)", len(before), len(after), len(long))
	// The scrape between added its own series; 302 requests added none.
	require.Less(t, len(after)-len(before), 4<<10, "302 made-up methods grew /metrics by %d bytes", len(after)-len(before))
}

// TestThroughputIgnoresLabelCaps: past TETHER_METRICS_MAX_TENANTS the
// metrics fold tenants under "other", but a tenant reading its queue's
// throughput sees its own counts only: zeros when it has no nodes.
func TestThroughputIgnoresLabelCaps(t *testing.T) {
	t.Parallel()
	e := start(t, func(c *server.Config) { c.QueueMetrics = queuemetrics.Limits{MaxTenants: 1, MaxQueues: 1} })
	ctx := context.Background()
	e.mustCreate(client.NodeCreate{Type: "task", Queue: ptr("first")}) // acme takes the one tenant label
	zebra := e.as(e.token("zebra", "z", "dispatcher"))
	for range 7 {
		res, err := zebra.CreateNodeWithResponse(ctx, nil, client.NodeCreate{Type: "task", Queue: ptr("jobs")})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	}
	for range 3 {
		c, err := zebra.ClaimNextWithResponse(ctx, "jobs", client.ClaimNextRequest{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, c.StatusCode(), string(c.Body))
		d, err := zebra.CompleteNodeWithResponse(ctx, c.JSON200.Node.ID, client.CompleteRequest{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, d.StatusCode(), string(d.Body))
	}
	total := func(c *client.ClientWithResponses, queue string) (created, completed int64, shared bool) {
		t.Helper()
		res, err := c.GetQueueThroughputWithResponse(ctx, queue)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		for _, m := range res.JSON200.Minutes {
			created += m.Created
			completed += m.Completed
		}
		return created, completed, res.JSON200.Shared
	}
	// The counts move once each transaction is durable (the store's queue
	// meter hook, which has no signal): the answers above may come first.
	require.Eventually(t, func() bool {
		c, d, _ := total(zebra, "jobs")
		return c == 7 && d == 3
	}, 5*time.Second, 5*time.Millisecond)
	empty := e.as(e.token("empty", "r", "reader"))
	for _, q := range []string{"jobs", "other", "first", "anything"} {
		c, d, shared := total(empty, q)
		require.Zero(t, c+d, "tenant empty reads queue %s", q)
		require.False(t, shared, q)
	}
	c, d, shared := total(zebra, "jobs")
	require.Equal(t, [2]int64{7, 3}, [2]int64{c, d})
	require.False(t, shared, "zebra's one queue is its own, whatever the labels")

	// Past its own cap of queues, zebra's second queue shares zebra's own
	// history, no one else's.
	res, err := zebra.CreateNodeWithResponse(ctx, nil, client.NodeCreate{Type: "task", Queue: ptr("more")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	require.Eventually(t, func() bool {
		c, _, shared := total(zebra, "more")
		return c == 1 && shared
	}, 5*time.Second, 5*time.Millisecond)
	c, _, _ = total(e.dispatcher(), "first")
	require.EqualValues(t, 1, c, "acme's own")
}
