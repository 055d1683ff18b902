package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/etcdtest"
)

// containerSecret is the HS256 secret the test's server verifies with.
const containerSecret = "deploy-test-secret-0123456789abcdef0123456789"

// podman runs podman with the repository's containers.conf (runc, cgroupfs,
// no default ulimits: what the CI machines need).
type podman struct {
	t    *testing.T
	conf string
}

func (p podman) run(args ...string) (string, error) {
	cmd := exec.Command("podman", args...)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+p.conf)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (p podman) must(args ...string) string {
	p.t.Helper()
	out, err := p.run(args...)
	require.NoError(p.t, err, "podman %s: %s", strings.Join(args, " "), out)
	return out
}

// needPodman skips the test where podman or runc is missing: .ci/run
// installs both (Debian's podman and runc).
func needPodman(t *testing.T) podman {
	t.Helper()
	for _, bin := range []string{"podman", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("skipped: %s is not installed, so the image is neither built nor run (apt-get install podman runc; .ci/run does)", bin)
		}
	}
	conf, err := filepath.Abs("docker/containers.conf")
	require.NoError(t, err)
	return podman{t: t, conf: conf}
}

// buildImage builds the image as make image does: a static binary in an
// otherwise empty context, wrapped by Dockerfile.prebuilt.
func buildImage(t *testing.T, p podman, tag string) {
	t.Helper()
	ctxDir := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(ctxDir, "tether"), "../cmd/tether")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	for _, dir := range []string{"data", "tmp"} {
		require.NoError(t, os.Mkdir(filepath.Join(ctxDir, dir), 0o755))
	}
	p.must("build", "--format", "docker", "-f", "docker/Dockerfile.prebuilt", "-t", tag, ctxDir)
	t.Cleanup(func() { _, _ = p.run("rmi", "-f", tag) })
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitReady polls /ready until it answers 200: the container's server has
// opened its store.
func waitReady(t *testing.T, p podman, name, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			logs, _ := p.run("logs", name)
			t.Fatalf("%s/ready did not answer 200 within 60 s (last error %v); the container's log:\n%s", url, err, logs)
		}
		time.Sleep(100 * time.Millisecond) // the server's own readiness is the signal; nothing else tells
	}
}

func mintToken(t *testing.T, tid, sub string, roles ...string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": sub, "tid": tid, "roles": roles, "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(containerSecret))
	require.NoError(t, err)
	return tok
}

// TestContainer builds the image as make image does, checks how it is made,
// and runs it in the two ways docs/deploy.md shows: on the embedded store
// with the data directory on a volume, and as two servers over etcd.
func TestContainer(t *testing.T) {
	p := needPodman(t)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	id := "tether-deploy-test-" + hex.EncodeToString(rnd[:])
	tag := "localhost/" + id + ":latest"
	buildImage(t, p, tag)

	size := p.must("image", "inspect", "--format", "{{.Size}}", tag)
	n, err := strconv.ParseInt(size, 10, 64)
	require.NoError(t, err, "image size %q", size)
	t.Logf("image %s: %.1f MB (%d bytes)", tag, float64(n)/1e6, n)

	var cfg []struct {
		Config struct {
			User         string
			ExposedPorts map[string]any
			Volumes      map[string]any
		}
		Healthcheck *struct{ Test []string }
	}
	require.NoError(t, json.Unmarshal([]byte(p.must("image", "inspect", tag)), &cfg))
	require.Len(t, cfg, 1)
	require.Equal(t, "65532:65532", cfg[0].Config.User, "the image runs as a non-root user")
	require.Contains(t, cfg[0].Config.ExposedPorts, "36725/tcp")
	require.Contains(t, cfg[0].Config.Volumes, "/data")
	require.NotNil(t, cfg[0].Healthcheck, "the image keeps its HEALTHCHECK (podman build --format docker)")
	require.Equal(t, []string{"CMD", "/tether", "health"}, cfg[0].Healthcheck.Test)

	t.Run("embedded store on a volume", func(t *testing.T) { testContainerBadger(t, p, tag, id) })
	t.Run("two servers over etcd", func(t *testing.T) { testContainerEtcd(t, p, tag, id) })
}

// testContainerBadger runs the image with its data directory on a volume:
// it answers the probes (and its own HEALTHCHECK), creates, claims and
// completes a node, and a new container on the same volume finds the node
// done.
func testContainerBadger(t *testing.T, p podman, tag, id string) {
	volume := id
	p.must("volume", "create", volume)
	t.Cleanup(func() { _, _ = p.run("volume", "rm", "-f", volume) })

	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	start := func(name string) {
		t.Helper()
		p.must("run", "-d", "--name", name, "-p", fmt.Sprintf("127.0.0.1:%d:36725", port),
			"-v", volume+":/data", "-e", "TETHER_JWT_SECRET="+containerSecret, tag)
		t.Cleanup(func() { _, _ = p.run("rm", "-f", "-v", "-t", "0", name) })
		waitReady(t, p, name, url)
	}
	first := id + "-1"
	start(first)

	resp, err := http.Get(url + "/health")
	require.NoError(t, err)
	var health struct{ Status, Version string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&health))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok", health.Status)
	require.NotEmpty(t, health.Version)
	// The image's HEALTHCHECK, run once by hand: tether health inside it.
	out, err := p.run("healthcheck", "run", first)
	require.NoError(t, err, "podman healthcheck run: %s", out)

	ctx := context.Background()
	head, worker := clientAs(t, url, "default", "head", "dispatcher"), clientAs(t, url, "default", "w1", "worker")
	cr, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("deploy-1"), Type: "task", Queue: ptr("q")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, cr.StatusCode(), "%s", cr.Body)
	cl, err := worker.ClaimNextWithResponse(ctx, "q", client.ClaimNextRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, cl.StatusCode(), "%s", cl.Body)
	require.Equal(t, "deploy-1", cl.JSON200.Node.ID)
	done, err := worker.CompleteNodeWithResponse(ctx, "deploy-1", client.CompleteRequest{Fence: ptr(cl.JSON200.Lease.Fence)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), "%s", done.Body)

	// A clean stop (SIGTERM: the server drains and closes its store), then a
	// new container on the same volume.
	p.must("stop", "-t", "30", first)
	logs := p.must("logs", first)
	require.Contains(t, logs, "stopped cleanly", "the server drains on the container's stop")
	p.must("rm", first)
	start(id + "-2")

	got, err := head.GetNodeWithResponse(ctx, "deploy-1")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, got.StatusCode(), "%s", got.Body)
	require.Equal(t, client.NodeStatusDone, got.JSON200.Status)
	require.Equal(t, int64(1), got.JSON200.Attempts)
}

func clientAs(t *testing.T, url, tid, sub string, roles ...string) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(url, client.WithBearerToken(mintToken(t, tid, sub, roles...)))
	require.NoError(t, err)
	return c
}

// testContainerEtcd runs two containers of the image as one cluster over an
// etcd (embedded in this test, on loopback: the containers share the host's
// network, as the servers of docs/deploy.md's etcd example share a LAN): work
// created through one server is claimed and completed through the other.
func testContainerEtcd(t *testing.T, p podman, tag, id string) {
	etcd := etcdtest.Start(t, 1)
	var urls []string
	for i := range 2 {
		name := fmt.Sprintf("%s-etcd-%d", id, i)
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p.must("run", "-d", "--name", name, "--network", "host",
			"-e", "TETHER_ADDR="+addr, "-e", "TETHER_STORE=etcd",
			"-e", "TETHER_ETCD_ENDPOINTS="+strings.Join(etcd.Endpoints, ","),
			"-e", "TETHER_ETCD_PREFIX="+etcd.Prefix(), "-e", "TETHER_ETCD_LEASE_TTL_MS=2000",
			"-e", "TETHER_JWT_SECRET="+containerSecret, tag)
		t.Cleanup(func() { _, _ = p.run("rm", "-f", "-v", "-t", "0", name) })
		urls = append(urls, "http://"+addr)
		waitReady(t, p, name, urls[i])
	}
	waitShardsOwned(t, urls, 16, func() string {
		a, _ := p.run("logs", id+"-etcd-0")
		b, _ := p.run("logs", id+"-etcd-1")
		return a + "\n---\n" + b
	})
	ctx := context.Background()
	// Tenants hash to shards, which either server may own: with four, a
	// request is most likely passed from one server to the other at least once.
	for i := range 4 {
		tid := fmt.Sprintf("tenant-%d", i)
		head, worker := clientAs(t, urls[0], tid, "head", "dispatcher"), clientAs(t, urls[1], tid, "w1", "worker")
		cr, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("job"), Type: "task", Queue: ptr("q")})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, cr.StatusCode(), "%s", cr.Body)
		cl, err := worker.ClaimNextWithResponse(ctx, "q", client.ClaimNextRequest{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, cl.StatusCode(), "%s", cl.Body)
		require.Equal(t, "job", cl.JSON200.Node.ID)
		done, err := worker.CompleteNodeWithResponse(ctx, "job", client.CompleteRequest{Fence: ptr(cl.JSON200.Lease.Fence)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, done.StatusCode(), "%s", done.Body)
		got, err := head.GetNodeWithResponse(ctx, "job")
		require.NoError(t, err)
		require.Equal(t, client.NodeStatusDone, got.JSON200.Status)
	}
}

// waitShardsOwned polls the servers' /ready until they own all n shards
// between them: until then a request for an unowned shard answers 503.
func waitShardsOwned(t *testing.T, urls []string, n int, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		owned := map[int]bool{}
		for _, u := range urls {
			resp, err := http.Get(u + "/ready")
			if err != nil {
				continue
			}
			var ready struct {
				ShardsOwned []int `json:"shards_owned"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&ready)
			resp.Body.Close()
			for _, k := range ready.ShardsOwned {
				owned[k] = true
			}
		}
		if len(owned) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s the servers own %d of %d shards; their logs:\n%s", len(owned), n, logs())
		}
		time.Sleep(100 * time.Millisecond) // /ready is the only signal of a shard's election
	}
}

func ptr[T any](v T) *T { return &v }
