package main

// Process-level test harness: TestMain builds the real tether binary once, and
// each test runs it as a subprocess with a clean environment, talking to it
// over HTTP with the generated client.

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/pgtest"
)

// testCommit is the commit TestMain stamps into the binary it builds.
const testCommit = "7e57c0117e57c0117e57c0117e57c0117e57c011"

// tetherBin is the binary TestMain built.
var tetherBin string

const (
	procSecret     = "proc-test-secret-0123456789abcdef0123456789"
	reaperInterval = 100 * time.Millisecond
	readyTimeout   = 10 * time.Second
	exitTimeout    = 10 * time.Second
)

func TestMain(m *testing.M) {
	if os.Getenv(frozenEnv) != "" { // re-executed as the frozen client of linearize_test.go
		os.Exit(runFrozenClient())
	}
	dir, err := os.MkdirTemp("", "tether-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "error making a temp dir:", err)
		os.Exit(1)
	}
	tetherBin = filepath.Join(dir, "tether")
	// Stamped as make stamps it, with a commit of its own, so that tests see
	// the commit reach tether version, /health and the start log.
	build := exec.Command("go", "build", "-ldflags", "-X github.com/tether-run/tether/internal/version.commit="+testCommit+
		" -X github.com/tether-run/tether/internal/version.modified=true", "-o", tetherBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "error building tether:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := pgtest.Run(m) // stops the PostgreSQL the tests of TETHER_STORE=postgres share
	os.RemoveAll(dir)
	os.Exit(code)
}

// lockedBuffer collects a subprocess's output; safe to read while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// proc is one running (or ended) tether subprocess.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	url    string
	stdout *lockedBuffer
	stderr *lockedBuffer
	exited chan struct{} // closed when Wait has returned
	// reach is how the test reaches it: nil for the default transport, set
	// for a process in a network namespace of its own.
	reach http.RoundTripper
}

// freeAddr is a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("error finding a free port: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

var loopbackPort = regexp.MustCompile(`127\.0\.0\.1:([0-9]+)`)

// firstEphemeralPort is where Linux starts picking ports for listeners on
// port 0 (net.ipv4.ip_local_port_range's default).
const firstEphemeralPort = 32768

// withFreePorts replaces every loopback address of script with a port in the
// ephemeral range by a free one, one for each distinct address.
func withFreePorts(t *testing.T, script string) string {
	free := map[string]string{}
	return loopbackPort.ReplaceAllStringFunc(script, func(addr string) string {
		if port, _ := strconv.Atoi(loopbackPort.FindStringSubmatch(addr)[1]); port < firstEphemeralPort {
			return addr
		}
		if _, ok := free[addr]; !ok {
			free[addr] = freeAddr(t)
		}
		return free[addr]
	})
}

// baseEnv is the clean environment every subprocess starts from: nothing of
// the test runner's TETHER_* or *_TOKEN variables leaks in but
// TETHER_ETCD_PIPELINE, which runs the etcd tests with a shard's
// transactions pipelined.
func baseEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if v := os.Getenv("TETHER_ETCD_PIPELINE"); v != "" {
		env = append(env, "TETHER_ETCD_PIPELINE="+v)
	}
	return env
}

// serverEnv is baseEnv plus a data dir, an address, the test secret and a
// fast reaper.
func serverEnv(dataDir, addr string, extra ...string) []string {
	env := append(baseEnv(),
		"TETHER_DATA_DIR="+dataDir,
		"TETHER_ADDR="+addr,
		"TETHER_JWT_SECRET="+procSecret,
		fmt.Sprintf("TETHER_REAPER_INTERVAL_MS=%d", reaperInterval.Milliseconds()),
	)
	return append(env, extra...)
}

// launch starts tether with args in env. addr is where it will listen (for
// the url). The process is killed in t.Cleanup if it is still running, and its
// output is shown if the test failed.
func launch(t *testing.T, name, addr string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(tetherBin, args...)
	cmd.Env = env
	return launchCmd(t, name, addr, cmd, nil)
}

// launchCmd is launch of a command made by the caller (tether run in a
// network namespace, say), reached through reach (nil: the default
// transport).
func launchCmd(t *testing.T, name, addr string, cmd *exec.Cmd, reach http.RoundTripper) *proc {
	t.Helper()
	p := &proc{
		t: t, name: name, url: "http://" + addr,
		stdout: &lockedBuffer{}, stderr: &lockedBuffer{},
		exited: make(chan struct{}), reach: reach,
	}
	p.cmd = cmd
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.cmd.WaitDelay = 2 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: error starting tether: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
				t.Errorf("%s: tether (pid %d) did not die after SIGKILL", name, p.cmd.Process.Pid)
			}
		}
		if t.Failed() {
			t.Logf("%s: tether stderr:\n%s", name, p.stderr.String())
			if out := p.stdout.String(); out != "" {
				t.Logf("%s: tether stdout:\n%s", name, out)
			}
		}
	})
	return p
}

// startServer launches `tether serve` on dataDir at a fresh port and waits
// until it is ready.
func startServer(t *testing.T, name, dataDir string, extraEnv ...string) *proc {
	t.Helper()
	addr := freeAddr(t)
	p := launch(t, name, addr, serverEnv(dataDir, addr, extraEnv...), "serve")
	p.waitReady()
	return p
}

// waitReady polls GET /ready every 10 ms until it answers 200, failing the
// test if the process exits or readyTimeout passes.
func (p *proc) waitReady() {
	p.t.Helper()
	hc := &http.Client{Timeout: time.Second, Transport: p.reach}
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := hc.Get(p.url + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.exited:
			p.t.Fatalf("%s: tether exited (%v) before it was ready", p.name, p.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: tether was not ready within %v (last: %v)", p.name, readyTimeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitExit waits (bounded) for the process to end and returns its exit code
// (-1 when a signal ended it).
func (p *proc) waitExit(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		p.t.Fatalf("%s: tether did not exit within %v", p.name, timeout)
		return 0
	}
}

// signal sends sig to the process.
func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := syscall.Kill(p.cmd.Process.Pid, sig); err != nil {
		p.t.Fatalf("%s: error sending %v: %v", p.name, sig, err)
	}
}

// kill9 kills the process with SIGKILL and waits for it to be gone.
func (p *proc) kill9() {
	p.t.Helper()
	p.signal(syscall.SIGKILL)
	if code := p.waitExit(5 * time.Second); code != -1 {
		p.t.Fatalf("%s: tether exited with %d before SIGKILL reached it", p.name, code)
	}
}

// mint is an HS256 JWT for sub in tenant acme, valid for an hour.
func mint(t *testing.T, sub string, roles ...string) string {
	t.Helper()
	return mintFor(t, time.Hour, sub, roles...)
}

// mintFor is mint for a token valid for ttl (a soak outlasts an hour).
func mintFor(t *testing.T, ttl time.Duration, sub string, roles ...string) string {
	t.Helper()
	claims := jwt.MapClaims{"sub": sub, "tid": "acme", "exp": time.Now().Add(ttl).Unix()}
	if len(roles) > 0 {
		claims["roles"] = roles
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(procSecret))
	if err != nil {
		t.Fatalf("error signing a token: %v", err)
	}
	return tok
}

// httpClient is a client whose transport keeps enough idle connections for
// concurrent load; closed in t.Cleanup.
func httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// as is a generated client for p authenticated with tok over hc.
func (p *proc) as(hc *http.Client, tok string) *client.ClientWithResponses {
	p.t.Helper()
	c, err := client.NewClientWithResponses(p.url, client.WithHTTPClient(hc), client.WithBearerToken(tok),
		// These tests watch the servers' own answers, 503s included.
		client.WithoutRetries())
	if err != nil {
		p.t.Fatalf("error making a client: %v", err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }
