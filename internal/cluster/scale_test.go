package cluster

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/etcdtest"
)

// TestScalingWithoutClientErrors drives load from clients that never retry,
// through a balancer that sends only to servers whose /ready answers 200,
// while the cluster goes from one server to three, back to one (clean
// stops), to three again, and through a rolling restart of all three: no
// client may see an error. Then one server, a child process, is killed with
// SIGKILL (after the balancer took it out of rotation, so that no client
// talks to it directly): errors are allowed only between the kill and the
// takeover of its shards, and each must be a 503 with Retry-After.
//
// The balancer sends only to servers whose probe passed; a stopping server
// fails its probe at once and still answers what reaches it while it
// hands its shards over, so a request sent to it just before the balancer
// noticed is answered too.
func TestScalingWithoutClientErrors(t *testing.T) {
	etcd := etcdtest.Start(t, 3)
	addrs := spreadAddrs(t, 3, testShards)
	a := &scaleServer{addr: addrs[0]}
	b := &scaleServer{addr: addrs[1]}
	c := &scaleServer{addr: addrs[2], proc: true}
	var tenants []string
	for k := range testShards {
		tenants = append(tenants, tenantOfShard(k))
	}
	lb := newBalancer(t)
	for _, s := range []*scaleServer{a, b, c} {
		s.etcd, s.lb = etcd, lb
	}
	a.start(t)
	waitSettled(t, a)
	l := startLoad(t, lb, tenants, "one server")
	cycles := 2 * len(tenants) // each phase ends after as many cycles of steady load

	var planned []string
	phase := func(name string, run func()) {
		t.Helper()
		planned = append(planned, name)
		l.setPhase(name)
		start := time.Now()
		run()
		took := time.Since(start)
		l.waitCycles(t, cycles)
		t.Logf("%s: moved in %v; %d requests, %d errors", name, took.Round(time.Millisecond), l.count(name), len(l.errors(name)))
		for _, e := range l.errors(name) {
			t.Logf("  %v", e)
		}
	}
	l.waitCycles(t, cycles)
	planned = append(planned, "one server")
	phase("1→3", func() {
		b.start(t)
		c.start(t)
		waitSettled(t, a, b, c)
	})
	phase("3→1 (clean stops)", func() {
		b.stop(t)
		c.stop(t)
		waitSettled(t, a)
	})
	phase("1→3 again", func() {
		b.start(t)
		c.start(t)
		waitSettled(t, a, b, c)
	})
	phase("rolling restart", func() {
		for _, s := range []*scaleServer{a, b, c} {
			s.stop(t)
			s.start(t)
			waitSettled(t, a, b, c)
		}
	})
	for _, p := range planned {
		require.Empty(t, l.errors(p), "errors reached the clients in phase %q", p)
		require.Positive(t, l.count(p))
	}

	const kill = "kill -9"
	l.setPhase(kill)
	lb.takeOut(c.url())
	killed := time.Now()
	c.child.kill(t)
	waitSettled(t, a, b)
	window := time.Since(killed)
	l.waitCycles(t, cycles)
	l.stop()
	errs := l.errors(kill)
	for _, e := range errs {
		require.Equal(t, http.StatusServiceUnavailable, e.status, "%v", e)
		require.NotEmpty(t, e.retryAfter, "%v", e)
		// A request may have been sent before the kill: it was in flight
		// at the killed server, and its answer is the kill's.
		require.False(t, e.answered.Before(killed), "an error before the kill: %v", e)
		require.False(t, e.answered.After(killed.Add(window)), "an error after the takeover: %v", e)
	}
	t.Logf("%s: takeover in %v (lease TTL %v); %d requests, %d errors, every one 503 with Retry-After inside the takeover",
		kill, window.Round(time.Millisecond), testLeaseTTL, l.count(kill), len(errs))
}

// scaleServer is a server of the scaling test at a fixed address, run in
// this process or (proc) in a child process that can be killed.
type scaleServer struct {
	addr  string
	proc  bool
	etcd  *etcdtest.Cluster
	lb    *balancer    // registers the server while it runs
	node  *testNode    // in this process, while running
	child *childServer // in a child process, while running
}

func (s *scaleServer) url() string { return "http://" + s.addr }

// start starts the server (again), registers it with the balancer and
// waits until it is a member.
func (s *scaleServer) start(t *testing.T) {
	t.Helper()
	if s.proc {
		s.child = startChild(t, s.etcd, testShards, s.addr)
	} else {
		s.node = startNode(t, s.etcd, testShards, listenAt(t, s.addr))
	}
	s.lb.add(s.url())
	waitReady(t, s.url())
}

// stop stops the server cleanly: it hands its shards over and leaves; the
// balancer, which saw /ready fail, deregisters it once it is gone.
func (s *scaleServer) stop(t *testing.T) {
	t.Helper()
	defer func() { s.node, s.child = nil, nil; s.lb.remove(s.url()) }()
	if s.proc {
		s.child.stop(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, s.node.Shutdown(ctx))
}

// waitSettled waits until the running servers among servers are the
// cluster's members, as each of them sees it, and each serves the shards
// placed on it.
func waitSettled(t *testing.T, servers ...*scaleServer) {
	t.Helper()
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.url())
	}
	slices.Sort(urls)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, s := range servers {
		if s.node != nil {
			ok := s.node.waitFor(ctx, func(v *view) (bool, time.Time) {
				var members []string
				for _, u := range v.members {
					members = append(members, u)
				}
				slices.Sort(members)
				return slices.Equal(members, urls) && s.node.settled(v), time.Now().Add(50 * time.Millisecond)
			})
			require.True(t, ok, "%s did not settle over %v", s.url(), urls)
			continue
		}
		var want []int
		for k := range testShards {
			if Placement(urls, k) == s.url() {
				want = append(want, k)
			}
		}
		for {
			var got struct {
				Owned []int `json:"shards_owned"`
			}
			if resp, err := http.Get(s.url() + "/ready"); err == nil {
				_ = json.NewDecoder(resp.Body).Decode(&got)
				resp.Body.Close()
			}
			if slices.Equal(got.Owned, want) {
				break
			}
			require.NoError(t, ctx.Err(), "%s serves %v, not %v", s.url(), got.Owned, want)
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// spreadAddrs are n free addresses such that servers there would each own
// at least one of shards shards.
func spreadAddrs(t *testing.T, n, shards int) []string {
	t.Helper()
	for range 200 {
		var addrs, urls []string
		for range n {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			addrs = append(addrs, l.Addr().String())
			urls = append(urls, "http://"+l.Addr().String())
			l.Close()
		}
		owned := map[string]int{}
		for k := range shards {
			owned[Placement(urls, k)]++
		}
		if len(owned) == n {
			return addrs
		}
	}
	t.Fatal("no free addresses spread the shards")
	return nil
}

// listenAt listens at addr, which a server stopped a moment ago may still
// hold.
func listenAt(t *testing.T, addr string) net.Listener {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil {
			return l
		}
		require.True(t, time.Now().Before(deadline), "cannot listen at %s: %v", addr, err)
		time.Sleep(50 * time.Millisecond)
	}
}

// tenantOfShard is a tenant whose shard is k.
func tenantOfShard(k int) string {
	for i := 0; ; i++ {
		t := "t" + strconv.Itoa(i)
		if ShardOfTenant(t, testShards) == k {
			return t
		}
	}
}
