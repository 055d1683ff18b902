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
	require.NoError(t, os.Mkdir(filepath.Join(ctxDir, "data"), 0o755))
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

func mintToken(t *testing.T, sub string, roles ...string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": sub, "tid": "default", "roles": roles, "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(containerSecret))
	require.NoError(t, err)
	return tok
}

// TestContainer builds the image, runs it with its data directory on a
// volume, answers the probes (and its own HEALTHCHECK), creates, claims and
// completes a node through it, then finds the node done in a new container
// on the same volume.
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

	volume := id
	p.must("volume", "create", volume)
	t.Cleanup(func() { _, _ = p.run("volume", "rm", "-f", volume) })

	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	start := func(name string) {
		t.Helper()
		p.must("run", "-d", "--name", name, "-p", fmt.Sprintf("127.0.0.1:%d:36725", port),
			"-v", volume+":/data", "-e", "TETHER_JWT_SECRET="+containerSecret, tag)
		t.Cleanup(func() { _, _ = p.run("rm", "-f", "-t", "0", name) })
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
	as := func(tok string) *client.ClientWithResponses {
		c, err := client.NewClientWithResponses(url, client.WithBearerToken(tok))
		require.NoError(t, err)
		return c
	}
	head, worker := as(mintToken(t, "head", "dispatcher")), as(mintToken(t, "w1", "worker"))
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

func ptr[T any](v T) *T { return &v }
