package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// EnvCluster names an external cluster to test against instead of embedded
// members: its client URLs, comma-separated.
const EnvCluster = "TETHER_TEST_ETCD"

// Cluster is a real etcd cluster for one test.
type Cluster struct {
	t         testing.TB
	Endpoints []string
	members   []*member // nil for an external cluster
	prefix    string
	dial      Dialer // how the test reaches process members; nil for the rest
}

type member struct {
	mu   sync.Mutex
	name string
	dir  string
	peer url.URL
	cli  url.URL
	all  string // the initial cluster, name=peer,...
	etcd *embed.Etcd
	proc *process // set for a member run as a process (StartProcesses)
}

var clusters atomic.Int64

// Start starts a cluster of n members embedded in this process on loopback
// ports (or takes the one TETHER_TEST_ETCD names), stopped when the test
// ends. Every test gets a key prefix of its own (Prefix), so tests may share
// an external cluster.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c, err := start(t.TempDir(), n)
	if c != nil && c.members != nil {
		t.Cleanup(c.stopAll)
	}
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	c.t = t
	return c
}

// StartShared starts a cluster of n members in dir for a whole test binary
// (from TestMain), or takes the one TETHER_TEST_ETCD names; stop stops it.
// Each test takes its own view of it with For.
func StartShared(dir string, n int) (c *Cluster, stop func(), err error) {
	c, err = start(dir, n)
	if c == nil {
		return nil, func() {}, err
	}
	if err != nil {
		c.stopAll()
		return nil, func() {}, err
	}
	return c, c.stopAll, nil
}

// For is a view of a shared cluster for test t, with a key prefix of its own.
func (c *Cluster) For(t testing.TB) *Cluster {
	return &Cluster{t: t, Endpoints: c.Endpoints, members: c.members, prefix: newPrefix(), dial: c.dial}
}

func newPrefix() string {
	return fmt.Sprintf("/tether-test/%d-%d/", os.Getpid(), clusters.Add(1))
}

// startAttempts is how many times start picks new ports when one it picked
// was taken before etcd could bind it (another test process's server took
// it in between).
const startAttempts = 3

func start(dir string, n int) (*Cluster, error) {
	if ext := os.Getenv(EnvCluster); ext != "" {
		return &Cluster{prefix: newPrefix(), Endpoints: strings.Split(ext, ",")}, nil
	}
	for attempt := 1; ; attempt++ {
		c, err := startMembers(filepath.Join(dir, fmt.Sprintf("try%d", attempt)), n)
		if err == nil || c == nil || attempt == startAttempts || !portTaken(err) {
			return c, err
		}
		c.stopAll()
	}
}

// portTaken reports whether err is a listen on a port already in use.
func portTaken(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// startMembers starts n members on ports free a moment before, their data
// under dir.
func startMembers(dir string, n int) (*Cluster, error) {
	c := &Cluster{prefix: newPrefix()}
	var peers []string
	urls, err := freeURLs(2 * n)
	if err != nil {
		return nil, err
	}
	for i := range n {
		peer, cli := urls[2*i], urls[2*i+1]
		m := &member{name: fmt.Sprintf("m%d", i), dir: filepath.Join(dir, fmt.Sprintf("etcd-m%d", i)), peer: peer, cli: cli}
		c.members = append(c.members, m)
		peers = append(peers, m.name+"="+m.peer.String())
		c.Endpoints = append(c.Endpoints, m.cli.String())
	}
	for _, m := range c.members {
		m.all = strings.Join(peers, ",")
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, m := range c.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.start()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

// Embedded reports whether the members run in this process (and so can be
// killed and restarted, as process members can).
func (c *Cluster) Embedded() bool { return c.members != nil && c.members[0].proc == nil }

// Members is how many members the test may kill and restart (0 for an
// external cluster).
func (c *Cluster) Members() int { return len(c.members) }

// Prefix is this test's key prefix: everything it stores goes under it.
func (c *Cluster) Prefix() string { return c.prefix }

// Client is a client of the whole cluster, closed when the test ends.
func (c *Cluster) Client() *clientv3.Client {
	c.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 5 * time.Second, DialOptions: c.dialOptions()})
	if err != nil {
		c.t.Fatalf("etcd client: %v", err)
	}
	c.t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Kill stops member i at once, as a crash would (its data stays on disk).
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	if c.members == nil {
		c.t.Skip("an external cluster's members cannot be killed from a test")
	}
	m := c.members[i]
	if m.proc != nil {
		m.killProcess()
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.etcd != nil {
		m.etcd.Server.HardStop()
		m.etcd.Close()
		m.etcd = nil
	}
}

// Restart starts member i again from its data directory and waits until it
// serves (which, if it restores a quorum, means the cluster has a leader).
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if c.members == nil {
		c.t.Skip("an external cluster's members cannot be restarted from a test")
	}
	if err := c.startMember(c.members[i]); err != nil {
		c.t.Fatalf("restarting etcd member %d: %v", i, err)
	}
}

// RestartAsync starts member i again without waiting for it to serve: a
// member alone without a quorum never does.
func (c *Cluster) RestartAsync(i int) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- c.startMember(c.members[i]) }()
	return ch
}

// startMember starts m, embedded or as a process, and waits until it serves.
func (c *Cluster) startMember(m *member) error {
	if m.proc != nil {
		return c.startProcess(m)
	}
	return m.start()
}

func (c *Cluster) stopAll() {
	for _, m := range c.members {
		if m.proc != nil {
			m.killProcess()
			continue
		}
		m.mu.Lock()
		if m.etcd != nil {
			m.etcd.Close()
			m.etcd = nil
		}
		m.mu.Unlock()
	}
}

func (m *member) start() error {
	m.mu.Lock()
	if m.etcd != nil {
		m.mu.Unlock()
		return nil
	}
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenPeerUrls = []url.URL{m.peer}
	cfg.AdvertisePeerUrls = []url.URL{m.peer}
	cfg.ListenClientUrls = []url.URL{m.cli}
	cfg.AdvertiseClientUrls = []url.URL{m.cli}
	cfg.InitialCluster = m.all
	cfg.InitialClusterToken = "tether-test"
	cfg.ClusterState = embed.ClusterStateFlagNew
	// Fast elections, so that tests of a lost member take seconds.
	cfg.TickMs = 20
	cfg.ElectionMs = 200
	cfg.LogLevel = "fatal" // its errors at Close are noise; tests judge by behaviour
	cfg.Logger = "zap"
	cfg.LogOutputs = []string{"stderr"}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		m.mu.Unlock()
		return err
	}
	m.etcd = e
	m.mu.Unlock()
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return err
	case <-time.After(60 * time.Second):
		return fmt.Errorf("etcd member %s did not become ready in 60 s", m.name)
	}
}

// freeURLs is k URLs on ports free a moment before, each a different one:
// every listener stays open until all are picked, so the kernel cannot
// hand the same port out twice (two members on one port: "duplicate url").
func freeURLs(k int) ([]url.URL, error) {
	urls := make([]url.URL, 0, k)
	for range k {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		defer l.Close()
		urls = append(urls, url.URL{Scheme: "http", Host: l.Addr().String()})
	}
	return urls, nil
}

// Wait waits until the cluster answers a linearizable read (it has a
// leader and a quorum), or fails the test after d.
func (c *Cluster) Wait(d time.Duration) {
	c.t.Helper()
	cli := c.Client()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "health-probe")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("etcd did not answer within %v: %v", d, err)
		}
		time.Sleep(50 * time.Millisecond) // etcd is another process: polling its answer is the only signal of its election
	}
}

// RaiseNoSpace raises etcd's NOSPACE alarm on member i, as etcd does when
// its database reaches the quota: from then on etcd refuses every write but
// deletes until the alarm is disarmed (DisarmAlarms).
func (c *Cluster) RaiseNoSpace(i int) {
	c.t.Helper()
	if !c.Embedded() {
		c.t.Skip("an external cluster's alarms cannot be raised from a test")
	}
	m := c.members[i]
	m.mu.Lock()
	e := m.etcd
	m.mu.Unlock()
	if e == nil {
		c.t.Fatalf("etcd member %d is not running", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := e.Server.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: uint64(e.Server.MemberID()), Alarm: pb.AlarmType_NOSPACE}); err != nil {
		c.t.Fatalf("raising NOSPACE on member %d: %v", i, err)
	}
}

// DisarmAlarms disarms every alarm of the cluster.
func (c *Cluster) DisarmAlarms() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Client().AlarmDisarm(ctx, &clientv3.AlarmMember{}); err != nil {
		c.t.Fatalf("disarming etcd's alarms: %v", err)
	}
}
