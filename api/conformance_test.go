package api_test

// The conformance suite: the API tests that matter (leases, fences, the
// lifecycle, queues, events, isolation, nodes, edges, batches, idempotency)
// run against every storage backend. By default every test runs on Badger;
// with TETHER_TEST_STORE=etcd (`make test` runs the package a second time
// so), the tests of the files below run on a real three-member etcd cluster
// (internal/etcdtest; TETHER_TEST_ETCD names an external one) with two
// Tether servers of one cluster over it, the client talking to the first:
// the tenants whose shards the second owns are served through forwarding.
// With TETHER_TEST_STORE=postgres (`make test-postgres`) the same two
// servers form a cluster over a real PostgreSQL instead, a fresh database
// per test (internal/pgtest; TETHER_TEST_POSTGRES_URL names an external
// server). The other tests of the package skip.

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

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/cluster"
	"github.com/tether-run/tether/internal/etcdtest"
	"github.com/tether-run/tether/internal/pgschema"
	"github.com/tether-run/tether/internal/pgtest"
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

// onPostgres is set when the package runs on PostgreSQL.
var onPostgres bool

func TestMain(m *testing.M) {
	switch os.Getenv("TETHER_TEST_STORE") {
	case "etcd":
	case "postgres":
		onPostgres = true
		os.Exit(pgtest.Run(m))
	default:
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

// onCluster says whether the package runs on a cluster (etcd or
// PostgreSQL) rather than Badger.
func onCluster() bool { return onEtcd != nil || onPostgres }

// startOnCluster serves cfg's API from two servers of one cluster over the
// shared etcd cluster or a fresh PostgreSQL database, the client talking to
// the first. It skips tests outside the conformance files.
func startOnCluster(t testing.TB, cfg server.Config) (*server.Server, string) {
	t.Helper()
	f := testFile()
	if f == "" {
		// Else every test would skip, and the suite pass on nothing.
		t.Fatal("no test file of package api_test on the stack")
	}
	if !conformanceFiles[f] {
		t.Skipf("%s is not part of the conformance suite (TETHER_TEST_STORE=%s)", f, os.Getenv("TETHER_TEST_STORE"))
	}
	base := cluster.Config{Shards: 4, Server: cfg, Logger: slog.New(slog.DiscardHandler), DrainTimeout: 5 * time.Second}
	if onPostgres {
		pool, err := pgxpool.New(context.Background(), pgtest.URL(t))
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		_, err = pgschema.Migrate(context.Background(), pool, cluster.DefaultSchema)
		require.NoError(t, err)
		base.Postgres = pool
	} else {
		etcd := onEtcd.For(t)
		base.Client, base.Prefix = etcd.Client(), etcd.Prefix()
	}
	var nodes []*cluster.Node
	var urls []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		url := "http://" + l.Addr().String()
		c := base
		c.Advertise = url
		n, err := cluster.Open(context.Background(), c)
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
