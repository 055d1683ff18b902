package netfault

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tether-run/tether/internal/testskip"
)

// subnet is every Net's network: each Net has namespaces of its own, so
// two Nets never see each other's addresses.
const subnet = "10.77.0."

// hubIP is the bridge's address in the hub namespace, where DialContext
// dials from.
const hubIP = subnet + "254"

// namePrefix begins the name of every namespace this package makes.
const namePrefix = "tether-"

var nets atomic.Int64

// Net is the namespaces of one test: a hub with a bridge, and the hosts.
type Net struct {
	t      testing.TB
	prefix string   // tether-<pid>-<n>-
	hub    *os.File // the hub namespace, which DialContext enters

	mu    sync.Mutex
	hosts []*Host
}

// New makes the hub namespace and its bridge, deleted when the test ends,
// or skips t where namespaces cannot be made here.
func New(t testing.TB) *Net {
	t.Helper()
	if os.Geteuid() != 0 {
		testskip.Missing(t, "network namespaces", "not root")
	}
	testskip.Programs(t, "ip", "iptables")
	removeStale()
	n := &Net{t: t, prefix: fmt.Sprintf("%s%d-%d-", namePrefix, os.Getpid(), nets.Add(1))}
	hub := n.prefix + "hub"
	if out, err := exec.Command("ip", "netns", "add", hub).CombinedOutput(); err != nil {
		testskip.Missing(t, "network namespaces", fmt.Sprintf("ip netns add: %v: %s", err, strings.TrimSpace(string(out))))
	}
	t.Cleanup(n.remove)
	n.ip("-n", hub, "link", "set", "lo", "up")
	n.ip("-n", hub, "link", "add", "br0", "type", "bridge")
	n.ip("-n", hub, "addr", "add", hubIP+"/24", "dev", "br0")
	n.ip("-n", hub, "link", "set", "br0", "up")
	f, err := os.Open("/run/netns/" + hub)
	if err != nil {
		t.Fatalf("opening the hub namespace: %v", err)
	}
	n.hub = f
	return n
}

// Host is one namespace on the bridge, with its address.
type Host struct {
	n    *Net
	Name string // the host's name in the test
	NS   string // its namespace
	IP   string
}

// Host makes a namespace joined to the bridge, with the next address.
func (n *Net) Host(name string) *Host {
	n.t.Helper()
	n.mu.Lock()
	i := len(n.hosts) + 1
	h := &Host{n: n, Name: name, NS: n.prefix + strconv.Itoa(i), IP: subnet + strconv.Itoa(i)}
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	if out, err := exec.Command("ip", "netns", "add", h.NS).CombinedOutput(); err != nil {
		n.t.Fatalf("ip netns add %s: %v: %s", h.NS, err, out)
	}
	port := "p" + strconv.Itoa(i) // the bridge's end, in the hub
	n.ip("link", "add", "eth0", "netns", h.NS, "type", "veth", "peer", "name", port, "netns", n.prefix+"hub")
	n.ip("-n", h.NS, "link", "set", "lo", "up")
	n.ip("-n", h.NS, "addr", "add", h.IP+"/24", "dev", "eth0")
	n.ip("-n", h.NS, "link", "set", "eth0", "up")
	n.ip("-n", n.prefix+"hub", "link", "set", "dev", port, "master", "br0")
	n.ip("-n", n.prefix+"hub", "link", "set", "dev", port, "up")
	return h
}

// Command is a command that runs name in the host's namespace. ip netns
// exec enters the namespace and then executes name in its own process, so
// the command's pid is name's: signals reach it directly.
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
}

// DialContext dials addr from the hub namespace, which reaches every host:
// for an http.Transport or a gRPC dialer in the test process. A socket
// stays in the namespace it was made in, so only the dial runs on a thread
// moved into the hub.
func (n *Net) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	type dialed struct {
		c   net.Conn
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		runtime.LockOSThread()
		back, err := os.Open(fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			ch <- dialed{nil, err}
			return
		}
		defer back.Close()
		if err := unix.Setns(int(n.hub.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- dialed{nil, fmt.Errorf("entering the hub namespace: %w", err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		// A thread that cannot go back stays locked, and so ends with this
		// goroutine instead of running others in the hub.
		if unix.Setns(int(back.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- dialed{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// ip runs ip with args, failing the test if it fails.
func (n *Net) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// remove deletes every namespace of n.
func (n *Net) remove() {
	if n.hub != nil {
		n.hub.Close()
	}
	n.mu.Lock()
	names := []string{n.prefix + "hub"}
	for _, h := range n.hosts {
		names = append(names, h.NS)
	}
	n.mu.Unlock()
	for _, name := range names {
		if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
			n.t.Errorf("ip netns delete %s: %v: %s", name, err, out)
		}
	}
}

// removeStale deletes the namespaces left by test processes that ended
// before their cleanup ran.
func removeStale() {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), namePrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); err == unix.ESRCH {
			_ = exec.Command("ip", "netns", "delete", e.Name()).Run()
		}
	}
}
