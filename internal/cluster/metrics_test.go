package cluster

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/etcdtest"
)

// TestMetricsRevealNoTenant: the front's anonymous /metrics names no
// tenant and no queue of the shards served here; an operator token's does,
// and so does the metrics listener.
func TestMetricsRevealNoTenant(t *testing.T) {
	n := startNode(t, etcdtest.Start(t, 1), testShards, nil)
	settle(t, n)
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "z", "tid": "zebra-tenant", "roles": []string{"dispatcher"}, "exp": 1 << 40,
	}).SignedString([]byte(testSecret))
	require.NoError(t, err)
	st, _, body := call(t, http.MethodPost, n.url+"/v1/nodes", tok, map[string]any{"type": "task", "queue": "secret-queue-xyz"})
	require.Equal(t, http.StatusCreated, st, string(body))

	st, _, anon := call(t, http.MethodGet, n.url+"/metrics", "", nil)
	require.Equal(t, http.StatusOK, st, string(anon))
	require.NotContains(t, string(anon), "zebra-tenant")
	require.NotContains(t, string(anon), "secret-queue-xyz")
	require.NotContains(t, string(anon), "tenant=")
	for _, name := range []string{"tether_cluster_shards_owned", "tether_cluster_shard_elections_total", "tether_ready 1", `tether_claims_total{shard="`} {
		require.Contains(t, string(anon), name)
	}
	require.Equal(t, 1, strings.Count(string(anon), "\ntether_ready "), "the front's own, not one per shard")

	shard := `shard="` + shardName(n.ShardOf("zebra-tenant")) + `"`
	st, _, all := call(t, http.MethodGet, n.url+"/metrics", "op-token", nil)
	require.Equal(t, http.StatusOK, st, string(all))
	want := `tether_queue_depth{queue="secret-queue-xyz",` + shard + `,status="queued",tenant="zebra-tenant"} 1`
	require.True(t, strings.Contains(string(all), want), "an operator's scrape has %s", want)

	for _, bad := range []string{tok, "wrong"} {
		st, hdr, body := call(t, http.MethodGet, n.url+"/metrics", bad, nil)
		require.Equal(t, http.StatusUnauthorized, st, string(body))
		require.Equal(t, "application/problem+json", hdr.Get("Content-Type"))
		require.Contains(t, string(body), "TETHER_METRICS_TOKENS")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = n.ServeMetrics(ln) }()
	st, _, all = call(t, http.MethodGet, "http://"+ln.Addr().String()+"/metrics", "", nil)
	require.Equal(t, http.StatusOK, st, string(all))
	require.Contains(t, string(all), `tenant="zebra-tenant"`)
	require.Contains(t, string(all), `queue="secret-queue-xyz"`)
	st, _, _ = call(t, http.MethodGet, "http://"+ln.Addr().String()+"/v1/nodes", tok, nil)
	require.Equal(t, http.StatusNotFound, st)
}
