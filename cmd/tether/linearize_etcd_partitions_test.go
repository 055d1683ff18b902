package main

// The partition runs of TestLinearizeEtcdFaults: the same load and checker
// as its other runs, with every process in a network namespace of its own
// (internal/netfault): three etcd member processes and the two Tether
// servers, each at an address of its own on one bridge, and the test's
// clients in the hub. Besides the faults of the other runs, the network
// splits, healed after lePartition, well past the servers' etcd lease:
//
//   - the owner of the shard cut off from every etcd member, both ways,
//     in only or out only, while its clients still reach it (and every
//     holder renews through it at once);
//   - the etcd leader cut off from the other two members (a minority of
//     one), both ways, its messages out only, or theirs in only, while the
//     Tether servers still reach it;
//
// and two faults at once: the owner killed while the etcd leader is killed.
// A call that may have waited in a cut-off server or member may take effect
// until leLateBound after the cut was healed, as for a pause. A read may
// show a lapsed lease for lePartition longer than on loopback
// (leSplitConfig): the reaper of a server cut off from etcd cannot settle
// the stored record until the cut heals.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/cluster"
	"github.com/tether-run/tether/internal/etcdtest"
	"github.com/tether-run/tether/internal/linearize"
	"github.com/tether-run/tether/internal/netfault"
	"github.com/tether-run/tether/internal/testskip"
)

// lePartition is how long a cut lasts: past the servers' etcd lease, so
// that a server cut off from etcd loses its shards, and past an etcd
// election.
const lePartition = efLeaseTTL + 2*time.Second

// leNet is the network of a partition run.
type leNet struct {
	n       *netfault.Net
	etcd    []*netfault.Host
	servers map[string]*netfault.Host // by server name (A, B): a restart takes its place again
}

// newLeNet makes the namespaces and starts the etcd members in three of
// them; it skips t, saying why, where namespaces or etcd are missing.
func newLeNet(t *testing.T) (*leNet, *etcdtest.Cluster, *http.Client) {
	n := netfault.New(t)
	testskip.Programs(t, "etcd") // Debian: apt-get install etcd-server; .ci/run installs it
	ln := &leNet{n: n, servers: map[string]*netfault.Host{}}
	var places []etcdtest.Place
	for i := range 3 {
		h := n.Host(fmt.Sprintf("etcd%d", i))
		ln.etcd = append(ln.etcd, h)
		places = append(places, etcdtest.Place{IP: h.IP, Command: h.Command})
	}
	ln.servers["A"], ln.servers["B"] = n.Host("A"), n.Host("B")
	e := etcdtest.StartProcesses(t, func(ctx context.Context, addr string) (net.Conn, error) {
		return n.DialContext(ctx, "tcp", addr)
	}, places...)
	tr := &http.Transport{DialContext: n.DialContext, MaxIdleConns: 256, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return ln, e, &http.Client{Transport: tr, Timeout: leCallLimit + time.Second}
}

// addrs are A's and B's addresses, on a port such that each would own the
// shards of at least two of efTenants (placement is by address).
func (ln *leNet) addrs(t *testing.T) (string, string) {
	t.Helper()
	for port := 7000; port < 8000; port++ {
		a := fmt.Sprintf("%s:%d", ln.servers["A"].IP, port)
		b := fmt.Sprintf("%s:%d", ln.servers["B"].IP, port)
		n := 0
		for _, tn := range efTenants {
			if cluster.Placement([]string{"http://" + a, "http://" + b}, cluster.ShardOfTenant(tn, efShards)) == "http://"+a {
				n++
			}
		}
		if n >= 2 && n <= len(efTenants)-2 {
			return a, b
		}
	}
	t.Fatal("no port spreads the tenants over A and B")
	return "", ""
}

// host is the namespace of server p (of its name, without the primes a
// restart adds).
func (ln *leNet) host(p *proc) *netfault.Host { return ln.servers[strings.TrimRight(p.name, "'")] }

// start starts `tether serve` named name at addr in its namespace, over the
// etcd members directly, and waits until it is ready.
func (ln *leNet) start(c *leCluster, name, addr string) *proc {
	c.t.Helper()
	env := serverEnv(c.t.TempDir(), addr,
		"TETHER_STORE=etcd",
		"TETHER_ETCD_ENDPOINTS="+strings.Join(c.etcd.Endpoints, ","),
		"TETHER_ETCD_PREFIX="+c.etcd.Prefix(),
		fmt.Sprintf("TETHER_ETCD_SHARDS=%d", efShards),
		fmt.Sprintf("TETHER_ETCD_LEASE_TTL_MS=%d", efLeaseTTL.Milliseconds()),
		"TETHER_ADVERTISE_URL=http://"+addr,
	)
	cmd := ln.servers[strings.TrimRight(name, "'")].Command(tetherBin, "serve")
	cmd.Env = env
	p := launchCmd(c.t, name, addr, cmd, c.hc.Transport)
	p.waitReady()
	return p
}

// cutOwnerFromEtcd cuts the shard's owner off from every etcd member in
// direction d while its clients still reach it, has every holder renew
// through it at once, and heals the cut after lePartition: by then, unless
// only what etcd sends it is dropped, its etcd lease has ended and the
// other server serves the shard.
func (c *leCluster) cutOwnerFromEtcd(d netfault.Direction) {
	o := c.owner(nil)
	if o == nil {
		c.t.Fatalf("nobody serves tenant %s", c.tenant)
	}
	h := c.net.host(o)
	from := c.action()
	heal := h.Cut(d, c.net.etcd...)
	c.count(fmt.Sprintf("owner cut off from etcd (%v), then healed", d))
	c.t.Logf("fault: owner %s (%s) cut off from etcd (%v) for %v; its clients still reach it", o.name, c.ids[o], d, lePartition)
	c.renewAllVia(o)
	// Cut off from what etcd sends alone, the owner's session stays alive
	// (its keepalives still arrive), and so does its ownership. Otherwise
	// the other server takes over within the cut, as it would in a real
	// split.
	if d != netfault.In && c.ownerOtherThan(o, lePartition) == nil {
		c.t.Fatalf("no server took over tenant %s while its owner was cut off from etcd (%v)", c.tenant, d)
	}
	time.Sleep(time.Until(time.Unix(0, from).Add(lePartition)))
	to := c.recovery(from)
	heal()
	c.hold(from, to)
	c.t.Logf("recovery: %s reaches etcd again", o.name)
}

// cutEtcdLeader cuts the etcd leader off from the other two members in
// direction d while the Tether servers still reach it, and heals the cut
// after lePartition.
func (c *leCluster) cutEtcdLeader(d netfault.Direction) {
	l := etcdLeader(c.t, c.etcd)
	var others []*netfault.Host
	for i, h := range c.net.etcd {
		if i != l {
			others = append(others, h)
		}
	}
	from := c.action()
	heal := c.net.etcd[l].Cut(d, others...)
	c.count(fmt.Sprintf("etcd leader cut off from the other members (%v), then healed", d))
	c.t.Logf("fault: etcd leader (member %d) cut off from the other members (%v) for %v", l, d, lePartition)
	time.Sleep(lePartition)
	to := c.recovery(from)
	heal()
	c.hold(from, to)
	c.t.Logf("recovery: etcd member %d reaches the others again", l)
}

// ownerOtherThan is a server other than o serving the tenant, once one
// does, within d plus owner's bound (nil if none does).
func (c *leCluster) ownerOtherThan(o *proc, d time.Duration) *proc {
	for deadline := time.Now().Add(d); ; {
		if n := c.owner(o); n != nil && n != o {
			return n
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(50 * time.Millisecond) // another process's election: its answer is the only signal
	}
}

// leSplitConfig is the model of a partition run: the default, but for a
// reaper that may be held up by a cut.
func leSplitConfig() linearize.Config {
	cfg := linearize.DefaultConfig(linMaxAttempts)
	cfg.ReaperSlack += lePartition
	return cfg
}

// partitionFaults is the schedule of a partition run: every split, each
// way, among the faults of the other runs.
func (c *leCluster) partitionFaults() []func() {
	return []func(){
		func() { c.cutOwnerFromEtcd(netfault.Both) },
		func() { c.cutEtcdLeader(netfault.Both) },
		c.killOwnerAndEtcdLeader,
		func() { c.cutOwnerFromEtcd(netfault.In) },
		func() { c.cutEtcdLeader(netfault.Out) },
		c.cutAndKillOwner,
		func() { c.cutOwnerFromEtcd(netfault.Out) },
		func() { c.cutEtcdLeader(netfault.In) },
		c.pauseOwner,
		c.killEtcdLeader,
		c.killOwner,
	}
}

// renewedWhileCut counts the renewals granted wholly within a cut that was
// healed: some by a server that could not reach etcd.
func (c *leCluster) renewedWhileCut() int {
	c.mu.Lock()
	stalls := c.stalls
	c.mu.Unlock()
	n := 0
	for _, op := range c.rec.Ops() {
		if op.Input.Kind != linearize.Renew || op.Output.Result != linearize.OK {
			continue
		}
		for _, w := range stalls {
			if w.cut && op.Call >= w.from && op.Return <= w.to {
				n++
			}
		}
	}
	return n
}
