package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
)

// refusalTimeout is how quickly a misconfigured server must give up.
const refusalTimeout = 5 * time.Second

// TestServeRefusesWithoutCredentials: with no credentials configured at all,
// `tether serve` refuses to start and says what to set.
func TestServeRefusesWithoutCredentials(t *testing.T) {
	addr := freeAddr(t)
	env := append(baseEnv(), "TETHER_DATA_DIR="+t.TempDir(), "TETHER_ADDR="+addr)
	p := launch(t, "no credentials", addr, env, "serve")
	start := time.Now()
	code := p.waitExit(refusalTimeout)
	if code == 0 {
		t.Fatalf("tether serve without credentials exited 0 (after %v)", time.Since(start))
	}
	stderr := p.stderr.String()
	for _, want := range []string{"TETHER_JWT_SECRET", "--dev"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not mention %s:\n%s", want, stderr)
		}
	}
	t.Logf("exit %d after %v", code, time.Since(start).Round(time.Millisecond))
}

var devTokenRE = regexp.MustCompile(`export TETHER_TOKEN=(\S+)`)
var devURLRE = regexp.MustCompile(`export TETHER_URL=(\S+)`)

// devToken waits (bounded) for the dev banner on p's stdout and returns the
// token it prints.
func devToken(t *testing.T, p *proc) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out := p.stdout.String()
		if m := devTokenRE.FindStringSubmatch(out); m != nil {
			if u := devURLRE.FindStringSubmatch(out); u == nil || u[1] != p.url {
				t.Errorf("the dev banner names url %v, want %s", u, p.url)
			}
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no `export TETHER_TOKEN=...` on stdout:\n%s", p.name, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeDevPrintsAdminToken: `tether serve --dev` needs nothing configured,
// prints a working admin token, and keeps its secret in the data dir so the
// token still works after a restart.
func TestServeDevPrintsAdminToken(t *testing.T) {
	dir := t.TempDir()
	hc := httpClient(t)
	devEnv := func(addr string) []string {
		return append(baseEnv(), "TETHER_DATA_DIR="+dir, "TETHER_ADDR="+addr)
	}

	addr := freeAddr(t)
	p1 := launch(t, "dev, first run", addr, devEnv(addr), "serve", "--dev")
	p1.waitReady()
	tok := devToken(t, p1)
	c := p1.as(hc, tok)
	ctx := context.Background()
	cr, err := c.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("hello"), Type: "task", Queue: ptr("default")})
	if err != nil || cr.StatusCode() != http.StatusCreated {
		t.Fatalf("create with the dev token: %v %s", err, respBody(cr))
	}
	cl, err := c.ClaimNodeWithResponse(ctx, "hello", client.ClaimRequest{})
	if err != nil || cl.StatusCode() != http.StatusOK || cl.JSON200 == nil {
		t.Fatalf("claim with the dev token: %v %s", err, body(cl))
	}
	fence := cl.JSON200.Lease.Fence
	if cl.JSON200.Lease.By != "admin" {
		t.Errorf("the dev token's identity is %q, want admin", cl.JSON200.Lease.By)
	}
	p1.signal(syscall.SIGTERM)
	if code := p1.waitExit(exitTimeout); code != 0 {
		t.Fatalf("dev server exited %d on SIGTERM", code)
	}

	addr = freeAddr(t)
	p2 := launch(t, "dev, second run", addr, devEnv(addr), "serve", "--dev")
	p2.waitReady()
	devToken(t, p2)    // it prints a banner again
	c = p2.as(hc, tok) // the token of the first run
	g, err := c.GetNodeWithResponse(ctx, "hello")
	if err != nil || g.StatusCode() != http.StatusOK || g.JSON200 == nil {
		t.Fatalf("the first run's dev token no longer works after a restart: %v %s", err, respBody(g))
	}
	if n := g.JSON200; n.Status != client.NodeStatusRunning || n.Lease == nil || n.Lease.Fence != fence {
		t.Errorf("hello after restart: status %q lease %+v, want running with fence %d", n.Status, n.Lease, fence)
	}
	cl, err = c.ClaimNodeWithResponse(ctx, "hello", client.ClaimRequest{})
	if err != nil || cl.StatusCode() != http.StatusOK || cl.JSON200 == nil {
		t.Fatalf("re-claim with the first run's token: %v %s", err, body(cl))
	}
	if !cl.JSON200.Renewed || cl.JSON200.Lease.Fence != fence {
		t.Errorf("re-claim of own lease: renewed=%v fence %d, want renewed with fence %d", cl.JSON200.Renewed, cl.JSON200.Lease.Fence, fence)
	}
}

// respBody is a response's status and body for messages.
func respBody(r interface {
	StatusCode() int
}) string {
	switch v := r.(type) {
	case *client.CreateNodeResponse:
		if v != nil {
			return fmt.Sprintf("%d %s", v.StatusCode(), v.Body)
		}
	case *client.GetNodeResponse:
		if v != nil {
			return fmt.Sprintf("%d %s", v.StatusCode(), v.Body)
		}
	}
	return body(r)
}

// TestSIGTERMDrainsAndClosesCleanly: SIGTERM while requests are flowing ends
// the process with 0 and "stopped cleanly"; no request that got an answer got
// an error answer; and everything acknowledged is there after a restart.
func TestSIGTERMDrainsAndClosesCleanly(t *testing.T) {
	dir := t.TempDir()
	hc := httpClient(t)
	p1 := startServer(t, "before SIGTERM", dir)
	ctx := context.Background()
	disp := p1.as(hc, mint(t, "head", "dispatcher"))
	worker := p1.as(hc, mint(t, "alice", "worker"))

	cr, err := disp.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("drain-1"), Type: "task", Queue: ptr("q")})
	if err != nil || cr.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %s", err, respBody(cr))
	}
	cl, err := worker.ClaimNodeWithResponse(ctx, "drain-1", client.ClaimRequest{TTLMS: ptr(int64(60000))})
	if err != nil || cl.StatusCode() != http.StatusOK || cl.JSON200 == nil {
		t.Fatalf("claim: %v %s", err, body(cl))
	}
	fence := cl.JSON200.Lease.Fence

	// A little load that is still running when SIGTERM arrives.
	var (
		mu      sync.Mutex
		acked   []string
		stopped atomic.Bool
		wg      sync.WaitGroup
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; !stopped.Load() && j < 100000; j++ {
				id := fmt.Sprintf("load-%d-%06d", w, j)
				r, err := disp.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("q")})
				if err != nil {
					return // the server stopped listening
				}
				if r.StatusCode() != http.StatusCreated {
					t.Errorf("during drain, create %s answered %d %s", id, r.StatusCode(), r.Body)
					return
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)

	p1.signal(syscall.SIGTERM)
	start := time.Now()
	code := p1.waitExit(exitTimeout)
	took := time.Since(start)
	stopped.Store(true)
	wg.Wait()
	if code != 0 {
		t.Fatalf("tether exited %d on SIGTERM, want 0", code)
	}
	if stderr := p1.stderr.String(); !strings.Contains(stderr, "stopped cleanly") {
		t.Errorf("stderr does not say it stopped cleanly:\n%s", stderr)
	}
	t.Logf("exited 0 %v after SIGTERM; %d creates acknowledged under load", took.Round(time.Millisecond), len(acked))

	p2 := startServer(t, "after SIGTERM", dir)
	reader := p2.as(hc, mint(t, "auditor", "reader"))
	g, err := reader.GetNodeWithResponse(ctx, "drain-1")
	if err != nil || g.StatusCode() != http.StatusOK || g.JSON200 == nil {
		t.Fatalf("drain-1 after restart: %v %s", err, respBody(g))
	}
	if n := g.JSON200; n.Status != client.NodeStatusRunning || n.Lease == nil || n.Lease.By != "alice" || n.Lease.Fence != fence {
		t.Errorf("drain-1 after restart: status %q lease %+v, want running by alice with fence %d", n.Status, n.Lease, fence)
	}
	for _, id := range acked {
		g, err := reader.GetNodeWithResponse(ctx, id)
		if err != nil || g.StatusCode() != http.StatusOK {
			t.Errorf("acknowledged create %s lost across SIGTERM: %v %s", id, err, respBody(g))
		}
	}
}

// TestBadEnvironmentIsRejected: a setting out of range stops the server
// before it starts, with a message naming the variable.
func TestBadEnvironmentIsRejected(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"TETHER_CLAIM_TTL_DEFAULT_MS", "500"},
		{"TETHER_CLAIM_TTL_DEFAULT_MS", "9000000"}, // above the max
		{"TETHER_CLAIM_TTL_MAX_MS", "90000000"},    // above the ceiling
		{"TETHER_MAX_ATTEMPTS", "0"},
		{"TETHER_REAPER_INTERVAL_MS", "soon"},
		{"TETHER_MAX_BODY_BYTES", "-1"},
		{"TETHER_ACCESS_LOG", "sometimes"},
		{"TETHER_ACCESS_LOG", "sample:0"},
		{"TETHER_LOG_LEVEL", "loud"},
		{"TETHER_LOG_FORMAT", "xml"},
		{"TETHER_MCP_ALLOWED_ORIGINS", "evil.example"}, // no scheme
		{"TETHER_MCP_ALLOWED_ORIGINS", "https://app.example/path"},
		{"TETHER_MCP_SESSION_IDLE_MS", "10"},
		{"TETHER_MCP_MAX_SESSIONS", "-1"},
		{"TETHER_MEMORY_LIMIT", "2GB"},  // GOMEMLIMIT's units: GiB
		{"TETHER_MEMORY_LIMIT", "1MiB"}, // below the smallest
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			addr := freeAddr(t)
			p := launch(t, tc.name, addr, serverEnv(t.TempDir(), addr, tc.name+"="+tc.value), "serve")
			if code := p.waitExit(refusalTimeout); code == 0 {
				t.Fatalf("tether serve with %s=%s exited 0", tc.name, tc.value)
			}
			if stderr := p.stderr.String(); !strings.Contains(stderr, tc.name) {
				t.Errorf("stderr does not name %s:\n%s", tc.name, stderr)
			}
		})
	}
}
