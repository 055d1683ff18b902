package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// TestServeMetricsAddr runs `tether serve` with TETHER_METRICS_ADDR and
// TETHER_METRICS_TOKENS: the public /metrics names no tenant or queue, the
// token's scrape and the metrics listener do, and a SIGTERM closes both.
func TestServeMetricsAddr(t *testing.T) {
	metricsAddr := freeAddr(t)
	p := startServer(t, "metrics", t.TempDir(), "TETHER_METRICS_ADDR="+metricsAddr, "TETHER_METRICS_TOKENS=scrape-secret")
	hc := httpClient(t)
	res, err := p.as(hc, mint(t, "d", "dispatcher")).CreateNodeWithResponse(context.Background(), nil,
		client.NodeCreate{Type: "task", Queue: ptr("secret-queue-xyz")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))

	scrape := func(url, tok string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		return string(b)
	}
	series := `tether_queue_depth{queue="secret-queue-xyz",status="queued",tenant="acme"} 1`
	anon := scrape(p.url+"/metrics", "")
	require.NotContains(t, anon, "secret-queue-xyz")
	require.NotContains(t, anon, `tenant="acme"`)
	require.Contains(t, anon, "tether_claims_total")
	require.True(t, strings.Contains(scrape(p.url+"/metrics", "scrape-secret"), series), "the token's scrape has %s", series)
	require.True(t, strings.Contains(scrape("http://"+metricsAddr+"/metrics", ""), series), "the metrics listener has %s", series)
	require.Contains(t, p.stderr.String(), "metrics_addr="+metricsAddr)

	p.signal(syscall.SIGTERM)
	require.Equal(t, 0, p.waitExit(exitTimeout))
	_, err = hc.Get("http://" + metricsAddr + "/metrics")
	require.Error(t, err, "the metrics listener closed with the server")
}
