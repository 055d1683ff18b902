package cluster

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether-run/tether/internal/etcdtest"
)

const testShards = 6

// startPair starts two servers over one three-member etcd cluster, each
// desired for at least two shards, and waits for them to settle.
func startPair(t *testing.T) (etcd *etcdtest.Cluster, a, b *testNode) {
	etcd = etcdtest.Start(t, 3)
	a = startNode(t, etcd, testShards, nil)
	b = startNode(t, etcd, testShards, balancedListener(t, a.url, testShards, 2))
	settle(t, a, b)
	return etcd, a, b
}

func TestShardsSpreadAndRequestsForward(t *testing.T) {
	_, a, b := startPair(t)
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
		// Written through one server, read through both: the same answers.
		for i, via := range []*testNode{a, b} {
			id := "n" + strconv.Itoa(i)
			st, _, body := call(t, http.MethodPost, via.url+"/v1/nodes", tok, map[string]any{"id": id, "type": "task", "queue": "q"})
			require.Equal(t, http.StatusCreated, st, string(body))
			_, _, fromA := call(t, http.MethodGet, a.url+"/v1/nodes/"+id, tok, nil)
			_, _, fromB := call(t, http.MethodGet, b.url+"/v1/nodes/"+id, tok, nil)
			require.JSONEq(t, string(fromA), string(fromB))
		}
		st, _, listA := call(t, http.MethodGet, a.url+"/v1/nodes", tok, nil)
		require.Equal(t, http.StatusOK, st)
		_, _, listB := call(t, http.MethodGet, b.url+"/v1/nodes", tok, nil)
		require.JSONEq(t, string(listA), string(listB))
		require.Contains(t, string(listA), `"n1"`)
		// The tenant's server holds it; the other holds nothing of it.
		require.True(t, (a.ShardServer(ten) == nil) != (b.ShardServer(ten) == nil))
	}

	// Bad credentials: answered by the front, as the API would.
	st, hdr, body := call(t, http.MethodGet, a.url+"/v1/nodes", "", nil)
	require.Equal(t, http.StatusUnauthorized, st)
	require.Contains(t, string(body), `"code":"unauthorized"`)
	require.NotEmpty(t, hdr.Get("WWW-Authenticate"))
	st, _, _ = call(t, http.MethodGet, a.url+"/v1/nodes", "not-a-token", nil)
	require.Equal(t, http.StatusUnauthorized, st)

	// A request forwarded to a server that does not serve the shard is
	// refused, never forwarded again.
	ten := tenantOn(a.Node, ob[0])
	st, hdr, body = call(t, http.MethodGet, a.url+"/v1/nodes", token(t, ten), nil, HeaderForwarded, "someone")
	require.Equal(t, http.StatusServiceUnavailable, st, string(body))
	require.Equal(t, "1", hdr.Get("Retry-After"))
	require.Contains(t, string(body), `"code":"unavailable"`)
	// ...or, to a sender that kept the body, sent back to route it again.
	st, hdr, body = call(t, http.MethodGet, a.url+"/v1/nodes", token(t, ten), nil, HeaderForwarded, "someone", headerReroutes, "1")
	require.Equal(t, http.StatusMisdirectedRequest, st, string(body))
	require.NotEmpty(t, hdr.Get(headerMisdirected))

	// Public routes, probes and metrics.
	for _, path := range []string{"/health", "/ready", "/openapi.yaml", "/skill.md", "/ui", "/ui/app.js", "/metrics"} {
		st, _, body := call(t, http.MethodGet, a.url+path, "", nil)
		require.Equal(t, http.StatusOK, st, path+": "+string(body))
	}
	_, _, metrics := call(t, http.MethodGet, b.url+"/metrics", "", nil)
	require.Contains(t, string(metrics), "tether_cluster_forwarded_requests_total")
	require.Contains(t, string(metrics), `shard="`+shardName(ob[0])+`"`)
	st, _, body = call(t, http.MethodGet, a.url+"/admin/backup", "op-token", nil)
	require.Equal(t, http.StatusNotImplemented, st)
	require.Contains(t, string(body), "etcdctl snapshot save")
	st, _, body = call(t, http.MethodPost, a.url+"/v1/blobs", token(t, ten), "x")
	require.Equal(t, http.StatusServiceUnavailable, st)
	require.Contains(t, string(body), "TETHER_BLOB_DIR")
}

func TestLongPollAndStreamThroughTheProxy(t *testing.T) {
	_, a, b := startPair(t)
	k := b.Owned()[0]
	ten := tenantOn(a.Node, k)
	tok := token(t, ten)
	require.Nil(t, a.ShardServer(ten))

	// An event stream through a, which passes it on to b.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url+"/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	// A long poll through a, answered when a node is made through b.
	claimed := make(chan []byte, 1)
	go func() {
		st, _, body := call(t, http.MethodPost, a.url+"/v1/queues/q/claim", tok, map[string]any{"wait_ms": 20000})
		if st != http.StatusOK {
			body = []byte(strconv.Itoa(st) + " " + string(body))
		}
		claimed <- body
	}()
	time.Sleep(300 * time.Millisecond) // let the poll start waiting; its answer does not depend on it
	st, _, body := call(t, http.MethodPost, b.url+"/v1/nodes", tok, map[string]any{"id": "job", "type": "task", "queue": "q"})
	require.Equal(t, http.StatusCreated, st, string(body))
	select {
	case body := <-claimed:
		require.Contains(t, string(body), `"job"`)
	case <-time.After(15 * time.Second):
		t.Fatal("the long poll through the proxy did not answer")
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "the stream ended")
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"job"`) {
				return
			}
		case <-deadline:
			t.Fatal("no event for the node on the stream through the proxy")
		}
	}
}

// writeEverywhere makes a node in a tenant of every shard, through a, and
// returns the tenants.
func writeEverywhere(t *testing.T, a *testNode) []string {
	var tenants []string
	for k := range testShards {
		ten := tenantOn(a.Node, k)
		st, _, body := call(t, http.MethodPost, a.url+"/v1/nodes", token(t, ten), map[string]any{"id": "kept", "type": "task", "queue": "q"})
		require.Equal(t, http.StatusCreated, st, string(body))
		tenants = append(tenants, ten)
	}
	return tenants
}

// requireKept checks that every tenant's node is there, read through n.
func requireKept(t *testing.T, n *testNode, tenants []string) {
	for _, ten := range tenants {
		st, _, body := call(t, http.MethodGet, n.url+"/v1/nodes/kept", token(t, ten), nil)
		require.Equal(t, http.StatusOK, st, "tenant %s: %s", ten, body)
	}
}

// waitOwnsAll waits until n serves every shard and returns how long it took.
func waitOwnsAll(t *testing.T, n *testNode, bound time.Duration) time.Duration {
	start := time.Now()
	for len(n.Owned()) < testShards {
		if time.Since(start) > bound {
			t.Fatalf("after %v the server owns only %v", bound, n.Owned())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func TestShutdownHandsEveryShardOver(t *testing.T) {
	_, a, b := startPair(t)
	tenants := writeEverywhere(t, a)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.Shutdown(ctx))
	took := waitOwnsAll(t, a, 10*time.Second)
	t.Logf("takeover after a clean shutdown: every shard served by a %v after Shutdown began (%v after it returned)", time.Since(start), took)
	requireKept(t, a, tenants)
}

func TestRevokedSessionStopsWritingAndHandsOver(t *testing.T) {
	etcd, a, b := startPair(t)
	tenants := writeEverywhere(t, a)
	k := a.Owned()[0]
	ten := tenantOn(a.Node, k)
	old := a.ShardServer(ten)
	require.NotNil(t, old)
	oldID := a.ID()
	lease, err := strconv.ParseInt(oldID, 16, 64)
	require.NoError(t, err)

	// Watch for the shard served again under a live session: by b, or by a
	// once it has joined again under a new session (a rejoins at once and is
	// the shard's desired owner again, so b may or may not get it first).
	servedAgain := make(chan string, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			if b.ShardServer(ten) != nil {
				servedAgain <- "b"
				return
			}
			if srv := a.ShardServer(ten); srv != nil && srv != old && a.ID() != oldID {
				servedAgain <- "a under its new session"
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	start := time.Now()
	_, err = etcd.Client().Revoke(context.Background(), clientv3.LeaseID(lease))
	require.NoError(t, err)

	// a stops writing to the shard it lost: its old shard server answers a
	// write 503 (the etcd store's guard fails at once).
	tok := token(t, ten)
	for i := 0; ; i++ {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/nodes", strings.NewReader(`{"type":"task","queue":"q"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		old.API.Handler().ServeHTTP(rec, req)
		if rec.Code == http.StatusServiceUnavailable {
			break
		}
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		require.Less(t, time.Since(start), 3*testLeaseTTL, "the old shard server still writes")
		time.Sleep(2 * time.Millisecond)
	}
	stopped := time.Since(start)
	for a.ShardServer(ten) == old {
		require.Less(t, time.Since(start), 3*testLeaseTTL, "a still serves the shard of its revoked session")
		time.Sleep(2 * time.Millisecond)
	}
	// ...and the shard is served again.
	select {
	case by := <-servedAgain:
		t.Logf("revoked session: a's old server answered writes to shard %d 503 after %v; the shard was served again (by %s) after %v", k, stopped, by, time.Since(start))
	case <-time.After(3 * testLeaseTTL):
		t.Fatal("nobody took the shard over")
	}

	// a joins again under a new id and gets its shards back; nothing is lost.
	settle(t, a, b)
	require.NotEqual(t, oldID, a.ID())
	require.NotEmpty(t, a.Owned())
	requireKept(t, a, tenants)
	requireKept(t, b, tenants)
}

// TestCutOffServerLosesItsShards: a server cut off from etcd (its client
// closed, as a crash or a partition would) keeps its shards for no longer
// than its lease: then the other server serves every shard, with the data.
func TestCutOffServerLosesItsShards(t *testing.T) {
	_, a, b := startPair(t)
	tenants := writeEverywhere(t, a)
	require.NoError(t, a.cli.Close())
	took := waitOwnsAll(t, b, 3*testLeaseTTL)
	t.Logf("takeover of a server cut off from etcd: %v (lease TTL %v)", took, testLeaseTTL)
	require.Empty(t, a.Owned())
	requireKept(t, b, tenants)
	st, hdr, body := call(t, http.MethodGet, a.url+"/ready", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, st, string(body))
	require.Equal(t, "1", hdr.Get("Retry-After"))
	st, _, body = call(t, http.MethodGet, b.url+"/ready", "", nil)
	require.Equal(t, http.StatusOK, st, string(body))
}

// TestLostQuorumThenResumes: with two of etcd's three members down, writes
// answer 503 and nothing else happens; once they are back, every shard is
// served again with everything acknowledged before.
func TestLostQuorumThenResumes(t *testing.T) {
	etcd, a, b := startPair(t)
	if !etcd.Embedded() {
		t.Skip("needs members the test can stop")
	}
	tenants := writeEverywhere(t, a)
	etcd.Kill(1)
	etcd.Kill(2)
	start := time.Now()
	tok := token(t, tenants[0])
	for {
		st, _, body := call(t, http.MethodPost, a.url+"/v1/nodes", tok, map[string]any{"type": "task", "queue": "q"})
		if st == http.StatusServiceUnavailable {
			break
		}
		require.Equal(t, http.StatusCreated, st, string(body)) // made before the members stopped answering
		require.Less(t, time.Since(start), 4*testLeaseTTL, "writes still succeed without a quorum")
	}
	t.Logf("without a quorum, writes answer 503 after %v", time.Since(start))
	r1, r2 := etcd.RestartAsync(1), etcd.RestartAsync(2)
	require.NoError(t, <-r1)
	require.NoError(t, <-r2)
	back := time.Now()
	// A server may not have seen yet that its session ended while etcd had
	// no quorum, so its view can look settled at once; until it rejoins, a
	// tenant of its shards is answered 503 with Retry-After. Every tenant
	// must be served again within a few lease TTLs, by either server.
	settle(t, a, b)
	for _, n := range []*testNode{a, b} {
		waitServed(t, n, tenants, back.Add(4*testLeaseTTL))
	}
	t.Logf("quorum back: every tenant served again through both servers after %v", time.Since(back))
	requireKept(t, a, tenants)
	requireKept(t, b, tenants)
}

// waitServed waits until n answers every tenant's kept node with anything
// but 503 (a shard between owners), failing the test at deadline.
func waitServed(t *testing.T, n *testNode, tenants []string, deadline time.Time) {
	t.Helper()
	for _, ten := range tenants {
		for {
			st, _, body := call(t, http.MethodGet, n.url+"/v1/nodes/kept", token(t, ten), nil)
			if st != http.StatusServiceUnavailable {
				break
			}
			require.True(t, time.Now().Before(deadline), "tenant %s still unserved: %s", ten, body)
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func TestShardCountIsFixed(t *testing.T) {
	etcd := etcdtest.Start(t, 3)
	startNode(t, etcd, testShards, nil)
	_, err := Open(context.Background(), Config{
		Client: etcd.Client(), Prefix: etcd.Prefix(), Shards: testShards + 1, Advertise: "http://127.0.0.1:1",
	})
	require.ErrorContains(t, err, strconv.Itoa(testShards)+" shards")
	require.ErrorContains(t, err, strconv.Itoa(testShards+1))
}

// TestRequestsWaitForAnOwner: while a shard's election is held by a key of
// no live member (a session that ended), a request waits up to 2 s and is
// answered 503 with Retry-After; one that arrives while the shard gets its
// owner is served.
func TestRequestsWaitForAnOwner(t *testing.T) {
	etcd := etcdtest.Start(t, 3)
	cli := etcd.Client()
	lease, err := cli.Grant(context.Background(), 60)
	require.NoError(t, err)
	ghost := etcd.Prefix() + "shards/00/owner/ghost"
	_, err = cli.Put(context.Background(), ghost, "http://127.0.0.1:1", clientv3.WithLease(lease.ID))
	require.NoError(t, err)
	n := startNode(t, etcd, 1, nil)
	tok := token(t, "t0")

	start := time.Now()
	st, hdr, body := call(t, http.MethodPost, n.url+"/v1/nodes", tok, map[string]any{"type": "task", "queue": "q"})
	waited := time.Since(start)
	require.Equal(t, http.StatusServiceUnavailable, st, string(body))
	require.Equal(t, "1", hdr.Get("Retry-After"))
	require.GreaterOrEqual(t, waited, orphanWait-100*time.Millisecond)
	require.Nil(t, n.ShardServer("t0"))

	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = cli.Delete(context.Background(), ghost)
	}()
	start = time.Now()
	st, _, body = call(t, http.MethodPost, n.url+"/v1/nodes", tok, map[string]any{"type": "task", "queue": "q"})
	if st == http.StatusServiceUnavailable {
		// A slow machine: the election and the opening took longer than
		// the wait. The shard is served soon all the same.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, n.WaitSettled(ctx))
		st, _, body = call(t, http.MethodPost, n.url+"/v1/nodes", tok, map[string]any{"type": "task", "queue": "q"})
	}
	require.Equal(t, http.StatusCreated, st, string(body))
	t.Logf("503 after waiting %v for an owner; served %v after the election was freed", waited, time.Since(start)-300*time.Millisecond)
}
