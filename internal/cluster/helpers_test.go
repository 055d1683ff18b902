package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether-run/tether/internal/core"
	"github.com/tether-run/tether/internal/etcdtest"
	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/tenancy"
)

const testSecret = "cluster-test-secret-0123456789abcdef"

// testLeaseTTL is the default: the tests end sessions by revoking them, and
// a shorter lease loses sessions by accident on a busy machine under -race.
const testLeaseTTL = 5 * time.Second

// testNode is one server of a test cluster, serving on a free port.
type testNode struct {
	*Node
	url string
	cli *clientv3.Client // the node's own etcd client
}

// startNode starts a server of the cluster at etcd's prefix, listening on
// l (a free port when nil).
func startNode(t *testing.T, etcd *etcdtest.Cluster, shards int, l net.Listener) *testNode {
	t.Helper()
	if l == nil {
		var err error
		l, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
	}
	url := "http://" + l.Addr().String()
	cli := etcd.Client()
	n, err := Open(context.Background(), testConfig(cli, etcd.Prefix(), shards, url))
	require.NoError(t, err)
	go func() { _ = n.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	return &testNode{Node: n, url: url, cli: cli}
}

// testConfig is the configuration of a test server at url (in this process
// or in a child process, process_test.go).
func testConfig(cli *clientv3.Client, prefix string, shards int, url string) Config {
	level := slog.LevelWarn
	if os.Getenv("TETHER_TEST_CLUSTER_LOG") != "" {
		level = slog.LevelInfo
	}
	return Config{
		Client: cli, Prefix: prefix, Shards: shards, Advertise: url, LeaseTTL: testLeaseTTL,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("node", url),
		DrainTimeout: 5 * time.Second,
		Server: server.Config{
			Config: core.Config{
				Tenant: tenancy.Config{JWTSecrets: []string{testSecret}},
			},
			OperatorTokens: []string{"op-token"},
		},
	}
}

// balancedListener listens on free ports until the rendezvous hash would
// give a server there, next to the one at other, at least min of shards.
func balancedListener(t *testing.T, other string, shards, least int) net.Listener {
	t.Helper()
	for range 200 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		v := &view{members: map[string]string{"a": other, "b": "http://" + l.Addr().String()}}
		mine := 0
		for k := range shards {
			if id, _ := v.desired(k); id == "b" {
				mine++
			}
		}
		if mine >= least && shards-mine >= least {
			return l
		}
		l.Close()
	}
	t.Fatal("no port splits the shards")
	return nil
}

// token is an admin JWT of tenant tid.
func token(t *testing.T, tid string) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "alice", "tid": tid, "roles": []string{"admin"}, "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(testSecret))
	require.NoError(t, err)
	return s
}

// tenantOn returns a tenant whose shard is k.
func tenantOn(n *Node, k int) string {
	for i := 0; ; i++ {
		t := "t" + strconv.Itoa(i)
		if n.ShardOf(t) == k {
			return t
		}
	}
}

// call makes a request and returns its status, headers and body.
func call(t *testing.T, method, url, tok string, body any, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

// settle waits until every node sees a settled cluster.
func settle(t *testing.T, nodes ...*testNode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, n := range nodes {
		require.NoError(t, n.WaitSettled(ctx))
	}
}
