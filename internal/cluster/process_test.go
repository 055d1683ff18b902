package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether-run/tether/internal/etcdtest"
	"github.com/tether-run/tether/internal/pgtest"
)

// A test that must kill a server with SIGKILL runs it as a child process:
// this test binary, started again with childEnv set, runs one server of the
// cluster instead of the tests, and hands its shards over on SIGTERM as
// `tether serve` does.

// childEnv carries a child server's settings (childConfig as JSON).
const childEnv = "TETHER_CLUSTER_TEST_CHILD"

type childConfig struct {
	Endpoints []string
	Prefix    string
	// PostgresURL, when set, is the database of a cluster on PostgreSQL
	// (migrated already), instead of etcd's Endpoints.
	PostgresURL string
	Shards      int
	Addr        string
}

func TestMain(m *testing.M) {
	if raw := os.Getenv(childEnv); raw != "" {
		if err := runChild(raw); err != nil {
			fmt.Fprintln(os.Stderr, "child server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(pgtest.Run(m))
}

// runChild serves as one server of the cluster until SIGTERM, then shuts
// down cleanly.
func runChild(raw string) error {
	var c childConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	var cfg Config
	if c.PostgresURL != "" {
		pool, err := pgxpool.New(context.Background(), c.PostgresURL)
		if err != nil {
			return err
		}
		defer pool.Close()
		cfg = pgTestConfig(pool, c.Shards, "http://"+c.Addr)
	} else {
		cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 5 * time.Second})
		if err != nil {
			return err
		}
		defer cli.Close()
		cfg = testConfig(cli, c.Prefix, c.Shards, "http://"+c.Addr)
	}
	l, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	n, err := Open(context.Background(), cfg)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(l) }()
	select {
	case <-sig:
	case err := <-served:
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return n.Shutdown(ctx)
}

// childServer is a server of the cluster in a child process.
type childServer struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the process's end, once exited is closed
}

// startChild starts a child server at addr over etcd's cluster.
func startChild(t *testing.T, etcd *etcdtest.Cluster, shards int, addr string) *childServer {
	t.Helper()
	return startChildOf(t, childConfig{Endpoints: etcd.Endpoints, Prefix: etcd.Prefix(), Shards: shards, Addr: addr})
}

// startChildOf starts a child server of c.
func startChildOf(t *testing.T, c childConfig) *childServer {
	t.Helper()
	addr := c.Addr
	raw, err := json.Marshal(c)
	require.NoError(t, err)
	logPath := filepath.Join(t.TempDir(), "server.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	child := &childServer{url: "http://" + addr, cmd: cmd, exited: make(chan struct{})}
	go func() {
		child.err = cmd.Wait()
		logFile.Close()
		close(child.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-child.exited
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("log of the server at %s:\n%s", addr, b)
		}
	})
	return child
}

// stop sends SIGTERM and waits for a clean exit.
func (c *childServer) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-c.exited:
		require.NoError(t, c.err, "the server at %s did not stop cleanly", c.url)
	case <-time.After(60 * time.Second):
		t.Fatalf("the server at %s did not stop within 60 s of SIGTERM", c.url)
	}
}

// kill kills the process with SIGKILL and waits until it is gone.
func (c *childServer) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	<-c.exited
}

// waitReady waits until url's /ready answers 200.
func waitReady(t *testing.T, url string) {
	t.Helper()
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := hc.Get(url + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "%s is not ready after 60 s: %v", url, err)
		time.Sleep(20 * time.Millisecond)
	}
}
