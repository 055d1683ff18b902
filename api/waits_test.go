package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/internal/server"
)

func waitLimits(perIdentity, perTenant int) option {
	return func(c *server.Config) { c.Waits = api.WaitLimits{PerIdentity: perIdentity, PerTenant: perTenant} }
}

// openStream opens an event stream for tok and returns once the server has
// answered its headers, that is once the stream holds its place; close ends
// it.
func openStream(t *testing.T, e *env, tok string) (close func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return func() {
		cancel()
		resp.Body.Close()
	}
}

// requireWaitRefused checks a 429 naming the cap.
func requireWaitRefused(t *testing.T, resp *http.Response, b []byte, setting string) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, string(b))
	var p problemBody
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, "rate_limited", p.Code)
	require.Contains(t, p.Detail, setting)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
}

// TestLongPollsAndStreamsAreCapped: an identity and a tenant may hold only
// so many long polls and event streams at once; one more is a 429 naming
// the cap, requests that do not wait are not counted, another tenant is not
// affected, and a place is given back when its request ends.
func TestLongPollsAndStreamsAreCapped(t *testing.T) {
	t.Parallel()
	e := start(t, waitLimits(2, 3))
	alice, bob := e.token("acme", "alice", "worker"), e.token("acme", "bob", "worker")
	carol := e.token("other", "carol", "worker")

	closeA1 := openStream(t, e, alice)
	defer closeA1()
	closeA2 := openStream(t, e, alice)
	defer closeA2()

	// alice is at her cap of 2: every kind of wait is refused.
	resp, b := e.raw(http.MethodPost, "/v1/queues/q/claim", alice, "application/json", `{"wait_ms":1000}`)
	requireWaitRefused(t, resp, b, "TETHER_MAX_WAITS_PER_IDENTITY")
	resp, b = e.raw(http.MethodPost, "/v1/queues/q/claims", alice, "application/json", `{"max":2,"wait_ms":1000}`)
	requireWaitRefused(t, resp, b, "TETHER_MAX_WAITS_PER_IDENTITY")
	resp, b = e.raw(http.MethodGet, "/v1/events?wait_ms=1000", alice, "", "")
	requireWaitRefused(t, resp, b, "TETHER_MAX_WAITS_PER_IDENTITY")
	require.Contains(t, string(b), "alice")
	// Requests that do not wait are not counted.
	resp, b = e.raw(http.MethodPost, "/v1/queues/q/claim", alice, "application/json", `{}`)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, string(b))
	resp, b = e.raw(http.MethodGet, "/v1/events", alice, "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))

	// bob takes the tenant's third place; then the tenant is full.
	closeB := openStream(t, e, bob)
	defer closeB()
	resp, b = e.raw(http.MethodGet, "/v1/events?wait_ms=1000", bob, "", "")
	requireWaitRefused(t, resp, b, "TETHER_MAX_WAITS_PER_TENANT")
	require.True(t, strings.Contains(string(b), "acme"), string(b))

	// Another tenant has its own count.
	closeC := openStream(t, e, carol)
	defer closeC()

	// A stream that ends gives its place back.
	closeA1()
	require.Eventually(t, func() bool {
		resp, _ := e.raw(http.MethodPost, "/v1/queues/q/claim", alice, "application/json", `{"wait_ms":1}`)
		return resp.StatusCode == http.StatusNoContent
	}, 10*time.Second, 20*time.Millisecond, "alice's closed stream gave its place back")
}
