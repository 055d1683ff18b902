package api_test

// The conformance suite: the API tests that matter (leases, fences, the
// lifecycle, queues, events, isolation, nodes, edges, batches, idempotency)
// run against both storage backends. By default every test runs on Badger;
// with TETHER_TEST_STORE=etcd (`make test` runs the package a second time
// so), the tests of the files below run on a real three-member etcd cluster
// (internal/etcdtest; TETHER_TEST_ETCD names an external one) with two
// Tether servers of one cluster over it, the client talking to the first:
// the tenants whose shards the second owns are served through forwarding.
// The other tests of the package skip.

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cluster"
	"github.com/tether-run/tether/internal/etcdtest"
	"github.com/tether-run/tether/internal/server"
)

// conformanceFiles are the test files whose tests run on both backends.
var conformanceFiles = map[string]bool{
	"leases_test.go":            true,
	"fence_optional_test.go":    true,
	"lease_bookkeeping_test.go": true,
	"lifecycle_test.go":         true,
	"queues_test.go":            true,
	"activity_test.go":          true, // events and comments
	"isolation_test.go":         true,
	"nodes_test.go":             true,
	"edges_test.go":             true,
	"batch_test.go":             true,
	"batch_complete_test.go":    true,
	"idempotency_test.go":       true,
	"claim_idempotency_test.go": true,
	"renew_visible_test.go":     true, // a read after a renewal shows it
}

// onEtcd is the shared etcd cluster when the package runs on etcd.
var onEtcd *etcdtest.Cluster

func TestMain(m *testing.M) {
	if os.Getenv("TETHER_TEST_STORE") != "etcd" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "tether-api-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c, stop, err := etcdtest.StartShared(dir, 3)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting etcd:", err)
		os.Exit(1)
	}
	onEtcd = c
	code := m.Run()
	stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testFile is the file of the test function that t runs (the outermost
// frame of this package's tests on the stack).
func testFile() string {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	file := ""
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.File, "_test.go") && strings.Contains(f.Function, "/api_test.") {
			file = filepath.Base(f.File)
		}
		if !more {
			return file
		}
	}
}

// startOnEtcd serves cfg's API from two servers of one cluster over the
// shared etcd cluster, the client talking to the first. It skips tests
// outside the conformance files.
func startOnEtcd(t testing.TB, cfg server.Config) (*server.Server, string) {
	t.Helper()
	f := testFile()
	if f == "" {
		// Else every test would skip, and the suite pass on nothing.
		t.Fatal("no test file of package api_test on the stack")
	}
	if !conformanceFiles[f] {
		t.Skipf("%s is not part of the conformance suite (TETHER_TEST_STORE=etcd)", f)
	}
	etcd := onEtcd.For(t)
	cli := etcd.Client()
	var nodes []*cluster.Node
	var urls []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		url := "http://" + l.Addr().String()
		n, err := cluster.Open(context.Background(), cluster.Config{
			Client: cli, Prefix: etcd.Prefix(), Shards: 4, Advertise: url,
			Server: cfg, Logger: slog.New(slog.DiscardHandler), DrainTimeout: 5 * time.Second,
		})
		require.NoError(t, err)
		go func() { _ = n.Serve(l) }()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = n.Shutdown(ctx)
		})
		nodes, urls = append(nodes, n), append(urls, url)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range nodes {
		require.NoError(t, n.WaitSettled(ctx))
	}
	var srv *server.Server
	for _, n := range nodes {
		if s := n.ShardServer("acme"); s != nil {
			srv = s
		}
	}
	return srv, urls[0]
}
