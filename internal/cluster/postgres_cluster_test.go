package cluster

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// pgTestConfig is the configuration of a test server at url of a cluster
// on PostgreSQL (in this process or in a child process).
func pgTestConfig(pool *pgxpool.Pool, shards int, url string) Config {
	cfg := testConfig(nil, "", shards, url)
	cfg.Postgres = pool
	return cfg
}

// startPgNode starts a server of the cluster in pool's database, listening
// on l (a free port when nil).
func startPgNode(t *testing.T, pool *pgxpool.Pool, shards int, l net.Listener) *testNode {
	t.Helper()
	if l == nil {
		var err error
		l, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
	}
	url := "http://" + l.Addr().String()
	n, err := Open(context.Background(), pgTestConfig(pool, shards, url))
	require.NoError(t, err)
	go func() { _ = n.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	return &testNode{Node: n, url: url}
}

// startPgPair starts two servers over one database, each desired for at
// least two shards, and waits for them to settle.
func startPgPair(t *testing.T) (pool *pgxpool.Pool, a, b *testNode) {
	pool = migratedPool(t)
	a = startPgNode(t, pool, testShards, nil)
	b = startPgNode(t, pool, testShards, balancedListener(t, a.url, testShards, 2))
	settle(t, a, b)
	return pool, a, b
}

// tokenOf is a JWT of identity sub in tenant tid with role.
func tokenOf(t *testing.T, tid, sub, role string) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": sub, "tid": tid, "roles": []string{role}, "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(testSecret))
	require.NoError(t, err)
	return s
}

func TestPostgresShardsSpreadAndRequestsForward(t *testing.T) {
	_, a, b := startPgPair(t)
	oa, ob := a.Owned(), b.Owned()
	t.Logf("a owns %v, b owns %v", oa, ob)
	require.GreaterOrEqual(t, len(oa), 2)
	require.GreaterOrEqual(t, len(ob), 2)
	require.Equal(t, testShards, len(oa)+len(ob))
	for _, k := range oa {
		require.NotContains(t, ob, k)
	}
	for _, k := range []int{oa[0], ob[0]} {
		ten := tenantOn(a.Node, k)
		tok := token(t, ten)
		// Written through either server, read through both: the same answers.
		for i, via := range []*testNode{a, b} {
			id := "n" + strconv.Itoa(i)
			st, hdr, body := call(t, http.MethodPost, via.url+"/v1/nodes", tok, map[string]any{"id": id, "type": "task", "queue": "q"})
			require.Equal(t, http.StatusCreated, st, string(body))
			owner := a
			if a.ShardServer(ten) == nil {
				owner = b
			}
			require.Equal(t, owner.ID(), hdr.Get(HeaderServedBy), "served by the shard's owner")
			_, _, fromA := call(t, http.MethodGet, a.url+"/v1/nodes/"+id, tok, nil)
			_, _, fromB := call(t, http.MethodGet, b.url+"/v1/nodes/"+id, tok, nil)
			require.JSONEq(t, string(fromA), string(fromB))
		}
		require.True(t, (a.ShardServer(ten) == nil) != (b.ShardServer(ten) == nil))
	}
	st, _, body := call(t, http.MethodGet, a.url+"/ready", "", nil)
	require.Equal(t, http.StatusOK, st, string(body))
	st, _, body = call(t, http.MethodGet, a.url+"/admin/backup", "op-token", nil)
	require.Equal(t, http.StatusNotImplemented, st)
	require.Contains(t, string(body), "pg_dump")
}

func TestPostgresShutdownHandsEveryShardOver(t *testing.T) {
	_, a, b := startPgPair(t)
	tenants := writeEverywhere(t, a)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.Shutdown(ctx))
	took := waitOwnsAll(t, a, 10*time.Second)
	t.Logf("takeover after a clean shutdown: every shard served by a %v after Shutdown began (%v after it returned)", time.Since(start), took)
	requireKept(t, a, tenants)
}

// TestPostgresKilledServerIsTakenOver: a server killed with SIGKILL has its
// shards taken over within its lease TTL (and the time to notice and open
// them); every write it acknowledged is there, and a lease whose renewal it
// answered is still held until at least the expiry it answered.
func TestPostgresKilledServerIsTakenOver(t *testing.T) {
	pool := migratedPool(t)
	a := startPgNode(t, pool, testShards, nil)
	l := balancedListener(t, a.url, testShards, 2)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	b := startChildOf(t, childConfig{PostgresURL: pool.Config().ConnString(), Shards: testShards, Addr: addr})
	waitReady(t, b.url)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.True(t, a.waitFor(ctx, func(v *view) (bool, time.Time) {
		return len(v.members) == 2 && a.settled(v), time.Now().Add(50 * time.Millisecond)
	}), "the cluster of a and b did not settle")
	var onB []int
	for k := range testShards {
		if a.shards[k].inst.Load() == nil {
			onB = append(onB, k)
		}
	}
	require.NotEmpty(t, onB)

	// Acknowledged writes everywhere, through a (forwarded to b for its
	// shards); and a lease on b's shard, renewed by b.
	tenants := writeEverywhere(t, a)
	ten := tenantOn(a.Node, onB[0])
	admin, worker, other := token(t, ten), tokenOf(t, ten, "w1", "worker"), tokenOf(t, ten, "w2", "worker")
	st, _, body := call(t, http.MethodPost, b.url+"/v1/nodes", admin, map[string]any{"id": "held", "type": "task", "queue": "q"})
	require.Equal(t, http.StatusCreated, st, string(body))
	st, _, body = call(t, http.MethodPost, b.url+"/v1/nodes/held/claim", worker, map[string]any{"ttl_ms": 60000})
	require.Equal(t, http.StatusOK, st, string(body))
	var claim struct {
		Lease struct {
			Fence   int64 `json:"fence"`
			Expires int64 `json:"expires"`
		} `json:"lease"`
	}
	require.NoError(t, json.Unmarshal(body, &claim))
	st, _, body = call(t, http.MethodPost, b.url+"/v1/nodes/held/renew", worker, map[string]any{"fence": claim.Lease.Fence})
	require.Equal(t, http.StatusOK, st, string(body))
	var renewed struct {
		Lease struct {
			Expires int64 `json:"expires"`
		} `json:"lease"`
	}
	require.NoError(t, json.Unmarshal(body, &renewed))

	b.kill(t)
	took := waitOwnsAll(t, a, 3*testLeaseTTL)
	t.Logf("kill -9: every shard of the killed server served by the other %v after the kill (lease TTL %v, poll %v)", took, testLeaseTTL, pollInterval(testLeaseTTL))
	require.Less(t, took, testLeaseTTL+3*time.Second, "the takeover took longer than the lease TTL and the time to notice and open")

	requireKept(t, a, tenants)
	// The renewed lease is still the worker's: another cannot take the
	// node, and the holder's renewal is accepted with its fence.
	st, _, body = call(t, http.MethodPost, a.url+"/v1/nodes/held/claim", other, map[string]any{"ttl_ms": 60000})
	require.Equal(t, http.StatusConflict, st, string(body))
	st, _, body = call(t, http.MethodGet, a.url+"/v1/nodes/held", admin, nil)
	require.Equal(t, http.StatusOK, st, string(body))
	var node struct {
		Lease struct {
			Expires int64 `json:"expires"`
		} `json:"lease"`
	}
	require.NoError(t, json.Unmarshal(body, &node))
	require.GreaterOrEqual(t, node.Lease.Expires, renewed.Lease.Expires, "the lease ends before the expiry its renewal answered: %s", body)
	st, _, body = call(t, http.MethodPost, a.url+"/v1/nodes/held/renew", worker, map[string]any{"fence": claim.Lease.Fence})
	require.Equal(t, http.StatusOK, st, string(body))
}
