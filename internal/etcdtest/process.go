package etcdtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// A Place is where a member process runs: the address it listens on (its
// own, so a test can cut it off from the others) and how to start a program
// there.
type Place struct {
	IP      string
	Command func(name string, args ...string) *exec.Cmd
}

// Dialer reaches the places' addresses from the test process.
type Dialer func(ctx context.Context, addr string) (net.Conn, error)

// process is a member run as a process of the etcd program.
type process struct {
	place  Place
	log    string        // its output, kept in a file
	cmd    *exec.Cmd     // nil while it is not running
	exited chan struct{} // closed when cmd has ended
}

// StartProcesses starts one member at each place as a process of the etcd
// program on PATH (Debian's etcd-server), and waits until the cluster
// serves; the test reaches the members through dial. Every member is killed
// when the test ends. A test that kills and restarts members, or cuts them
// off from each other, uses these where embedded members cannot be placed.
func StartProcesses(t testing.TB, dial Dialer, places ...Place) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Fatalf("etcd member processes need the etcd program: %v", err)
	}
	dir := t.TempDir()
	c := &Cluster{t: t, prefix: newPrefix(), dial: dial}
	var peers []string
	for i, pl := range places {
		m := &member{
			name: fmt.Sprintf("m%d", i),
			dir:  filepath.Join(dir, fmt.Sprintf("etcd-m%d", i)),
			peer: url.URL{Scheme: "http", Host: net.JoinHostPort(pl.IP, "2380")},
			cli:  url.URL{Scheme: "http", Host: net.JoinHostPort(pl.IP, "2379")},
			proc: &process{place: pl, log: filepath.Join(dir, fmt.Sprintf("etcd-m%d.log", i))},
		}
		c.members = append(c.members, m)
		peers = append(peers, m.name+"="+m.peer.String())
		c.Endpoints = append(c.Endpoints, m.cli.String())
	}
	for _, m := range c.members {
		m.all = strings.Join(peers, ",")
	}
	t.Cleanup(func() {
		c.stopAll()
		if t.Failed() {
			for _, m := range c.members {
				if b, err := os.ReadFile(m.proc.log); err == nil {
					t.Logf("etcd member %s (%s):\n%s", m.name, m.cli.Host, tail(string(b), 40))
				}
			}
		}
	})
	errs := make(chan error, len(c.members))
	for _, m := range c.members {
		go func() { errs <- c.startProcess(m) }()
	}
	for range c.members {
		if err := <-errs; err != nil {
			t.Fatalf("starting etcd: %v", err)
		}
	}
	return c
}

// startProcess starts m's process and waits until m serves a linearizable
// read, which it does only as part of a quorum.
func (c *Cluster) startProcess(m *member) error {
	m.mu.Lock()
	p := m.proc
	if p.cmd != nil {
		m.mu.Unlock()
		return nil
	}
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		m.mu.Unlock()
		return err
	}
	defer logf.Close()
	// Fast elections, as for embedded members, a little slower: these
	// talk over a bridge on a loaded machine.
	cmd := p.place.Command("etcd",
		"--name", m.name, "--data-dir", m.dir,
		"--listen-peer-urls", m.peer.String(), "--initial-advertise-peer-urls", m.peer.String(),
		"--listen-client-urls", m.cli.String(), "--advertise-client-urls", m.cli.String(),
		"--initial-cluster", m.all, "--initial-cluster-token", "tether-test", "--initial-cluster-state", "new",
		"--heartbeat-interval", "50", "--election-timeout", "500",
		"--logger", "zap", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		m.mu.Unlock()
		return fmt.Errorf("etcd member %s: %w", m.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	m.mu.Unlock()

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.cli.String()}, DialTimeout: time.Second, DialOptions: c.dialOptions()})
	if err != nil {
		return err
	}
	defer cli.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "health-probe")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("etcd member %s exited (see %s)", m.name, p.log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd member %s did not serve in 60 s: %v", m.name, err)
		}
		time.Sleep(50 * time.Millisecond) // another process: its answer is the only signal
	}
}

// killProcess kills m's process with SIGKILL and waits until it has ended.
func (m *member) killProcess() {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.proc
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	p.cmd = nil
}

// dialOptions makes the test's clients dial through c.dial, if it has one.
func (c *Cluster) dialOptions() []grpc.DialOption {
	if c.dial == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithContextDialer(c.dial)}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
