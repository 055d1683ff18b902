package main

// Linearizability of leases on the etcd store under faults (a renewal
// answered is seen by later reads and kept across a takeover): two `tether serve` processes over a three-member etcd cluster,
// holders with short leases renewing at about half their TTL through either
// server, challengers claiming the same nodes, releases, completions and
// reads, while the owner of the nodes' shard is killed with SIGKILL (and
// started again), cut off from etcd and then killed (every renewal it answered
// meanwhile is lost), paused with SIGSTOP past its etcd lease (and resumed),
// the etcd leader is killed (and restarted), and the owner is killed while
// the etcd leader is killed. The partition runs
// (linearize_etcd_partitions_test.go) add splits of the network. porcupine
// checks the whole history against internal/linearize's model, the API's
// promise: no two holders at once, no answered renewal lost, no
// acknowledged write lost.
//
// Every opening of the shard (a takeover, a handback, a reopening after a
// broken store) is a Restart operation of the model on every node: from the
// last fault or recovery action before it to the moment the server logged
// it served the shard, which is after leasing.Service.Start ran.
//
// CI runs one short run of each; TETHER_LINEARIZE=long runs five of each,
// of three minutes; TETHER_LINEARIZE_ETCD_{RUNS,SECONDS} override either.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"

	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/cluster"
	"github.com/tether-run/tether/internal/etcdtest"
	"github.com/tether-run/tether/internal/linearize"
	"github.com/tether-run/tether/internal/netfault"
)

const (
	leHolderTTL = 2 * time.Second // the holders' leases, renewed at about half of it: about what a takeover takes
	leCallLimit = 4 * time.Second // a call's client timeout: then its outcome is unknown
	leLateBound = 2 * time.Second // an unknown call takes effect no later than this after it was given up (or its paused server resumed)
	leGap       = 9 * time.Second // between fault actions: a takeover settles well within it
	lePause     = efLeaseTTL + 1500*time.Millisecond
)

// leScale is the size of an etcd linearizability run: load is that of a
// run on loopback, splits that of a partition run.
type leScale struct {
	runs, clients, nodes int
	load, splits         time.Duration
}

func linearizeEtcdScale(t *testing.T) leScale {
	s := leScale{runs: 1, clients: 8, nodes: 6, load: 45 * time.Second, splits: 90 * time.Second}
	if os.Getenv("TETHER_LINEARIZE") == "long" {
		s = leScale{runs: 5, clients: 10, nodes: 8, load: 3 * time.Minute, splits: 3 * time.Minute}
	}
	if env := os.Getenv("TETHER_LINEARIZE_ETCD_RUNS"); env != "" {
		n, err := strconv.Atoi(env)
		if err != nil || n < 1 {
			t.Fatalf("TETHER_LINEARIZE_ETCD_RUNS=%q is not a positive count", env)
		}
		s.runs = n
	}
	if env := os.Getenv("TETHER_LINEARIZE_ETCD_SECONDS"); env != "" {
		n, err := strconv.Atoi(env)
		if err != nil || n < 1 {
			t.Fatalf("TETHER_LINEARIZE_ETCD_SECONDS=%q is not a positive count", env)
		}
		s.load = time.Duration(n) * time.Second
		s.splits = s.load
	}
	return s
}

// leCluster is the etcd cluster, the Tether servers (every process ever
// started, for their logs), the tenant under test and the recorder.
type leCluster struct {
	t      *testing.T
	etcd   *etcdtest.Cluster
	hc     *http.Client
	tenant string
	shard  int
	rec    *linearize.Recorder
	toks   map[string]string // identity -> token
	net    *leNet            // the namespaces of a partition run; nil on loopback
	// pg is the PostgreSQL database of a run on PostgreSQL ("" on etcd).
	pg string

	mu      sync.Mutex
	live    []*proc                // servers that answer (or will, once resumed)
	all     []*proc                // every server process started
	ids     map[*proc]string       // the server id each reports
	proxies map[*proc][]*etcdProxy // its etcd proxies, one per member
	cuts    [][2]int64             // each cut-then-kill: from the cut to the kill (Unix ns)
	stalls  []leHold               // each pause, and each cut that was healed
	held    map[string]leHolder    // node -> the lease a client believes it holds
	actions []int64                // when each fault or recovery action began (Unix ns)
	causes  map[int64]int64        // a recovery action -> the fault action it ends
	faults  map[string]int         // fault kind -> how many

	unexpected sync.Map
}

// action records that a fault or recovery action begins now, and returns
// the instant.
func (c *leCluster) action() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := linearize.Now()
	c.actions = append(c.actions, at)
	return at
}

// recovery records that an action ending the fault that began at from
// begins now, and returns the instant. A shard opened after it may have been
// lost to the fault before it (a server cut off from etcd or paused loses
// its session only later, and another then takes over): such an opening is
// checked as a restart from the fault.
func (c *leCluster) recovery(from int64) int64 {
	at := c.action()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.causes[at] = from
	return at
}

// leHold is a window in which a call may have waited in a process that
// could not go on: a pause (SIGSTOP to SIGCONT), or a cut of the network (to
// its heal).
type leHold struct {
	from, to int64 // Unix ns
	cut      bool
}

// hold records a cut from from to to, healed.
func (c *leCluster) hold(from, to int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stalls = append(c.stalls, leHold{from: from, to: to, cut: true})
}

func (c *leCluster) servers() []*proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.live)
}

// call sends in through a server picked at random and records it.
func (c *leCluster) call(ctx context.Context, rng *rand.Rand, in linearize.Input) linearize.Output {
	srv := c.servers()
	return c.callVia(ctx, srv[rng.IntN(len(srv))], in)
}

// callVia sends in through p and records it, unless it surely had no
// effect: p was dead when it was sent, or the answer says the request never
// reached a shard's server (no owner yet, or the owner could not be
// reached), so that the history holds no unknown outcome it need not.
func (c *leCluster) callVia(ctx context.Context, p *proc, in linearize.Input) linearize.Output {
	if c.isDead(p) {
		return linearize.Output{Result: linearize.Unknown}
	}
	ctx, cancel := context.WithTimeout(ctx, leCallLimit)
	defer cancel()
	call := linearize.Now()
	out, err := callLease(ctx, p.as(c.hc, c.toks[in.Client]), in)
	ret := linearize.Now()
	if err != nil {
		msg := err.Error()
		switch {
		case !strings.Contains(msg, "unexpected 503"):
			c.unexpected.Store(msg, true)
		case strings.Contains(msg, "an election is in progress"),
			strings.Contains(msg, "does not serve this tenant right now"),
			strings.Contains(msg, "the request was not passed on"):
			return out
		}
	}
	c.rec.Add(linearize.Op{Input: in, Output: out, Call: call, Return: ret})
	return out
}

func (c *leCluster) isDead(p *proc) bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// owner is the server that serves the tenant now, asked through a live
// server other than skip (nil when none answers within 20 s).
func (c *leCluster) owner(skip *proc) *proc {
	deadline := time.Now().Add(20 * time.Second)
	hc := &http.Client{Transport: c.hc.Transport, Timeout: time.Second}
	for time.Now().Before(deadline) {
		for _, p := range c.servers() {
			if p == skip {
				continue
			}
			res, err := p.as(hc, c.toks["auditor"]).ListEventsWithResponse(context.Background(), &client.ListEventsParams{Limit: ptr(1)})
			if err != nil || res.StatusCode() != http.StatusOK {
				continue
			}
			if q := c.byID(res.HTTPResponse.Header.Get(efServedBy)); q != nil {
				return q
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// byID is the live server whose id is id, asking each for its id again
// when none has it (a server whose etcd session ended joins with a new one).
func (c *leCluster) byID(id string) *proc {
	for range 2 {
		c.mu.Lock()
		for q, qid := range c.ids {
			if qid == id && slices.Contains(c.live, q) {
				c.mu.Unlock()
				return q
			}
		}
		c.mu.Unlock()
		for _, p := range c.servers() {
			resp, err := c.hc.Get(p.url + "/health")
			if err != nil {
				continue
			}
			resp.Body.Close()
			c.mu.Lock()
			c.ids[p] = resp.Header.Get(efServedBy)
			c.mu.Unlock()
		}
	}
	return nil
}

// start starts a server at addr that reaches each etcd member through a
// proxy of its own, so that it can be cut off from etcd alone (in a
// partition run, in its namespace, which can be).
func (c *leCluster) start(name, addr string) *proc {
	if c.pg != "" {
		p := startPostgresServerAt(c.t, c.pg, name, addr)
		id := serverID(c.t, c.hc, p)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.live = append(c.live, p)
		c.all = append(c.all, p)
		c.ids[p] = id
		return p
	}
	if c.net != nil {
		p := c.net.start(c, name, addr)
		id := serverID(c.t, c.hc, p)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.live = append(c.live, p)
		c.all = append(c.all, p)
		c.ids[p] = id
		return p
	}
	var urls []string
	var proxies []*etcdProxy
	for _, ep := range c.etcd.Endpoints {
		px := startEtcdProxy(c.t, strings.TrimPrefix(ep, "http://"))
		proxies = append(proxies, px)
		urls = append(urls, px.URL())
	}
	p := startEtcdServerAt(c.t, c.etcd, name, addr, "TETHER_ETCD_ENDPOINTS="+strings.Join(urls, ","))
	id := serverID(c.t, c.hc, p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = append(c.live, p)
	c.all = append(c.all, p)
	c.ids[p] = id
	c.proxies[p] = proxies
	return p
}

func (c *leCluster) drop(p *proc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = slices.DeleteFunc(c.live, func(q *proc) bool { return q == p })
}

// killOwner kills the shard's owner with SIGKILL and, a while later, starts
// it again at its address (it becomes the desired owner again: a handback).
func (c *leCluster) killOwner() { c.killOwnerAfter(0) }

// cutAndKillOwner cuts the owner off from etcd (its proxies hold every byte)
// for cut, while it goes on answering renewals once applied, then kills it
// with SIGKILL: every renewal it answered meanwhile is lost. Then as
// killOwner.
func (c *leCluster) cutAndKillOwner() { c.killOwnerAfter(500 * time.Millisecond) }

func (c *leCluster) killOwnerAfter(cut time.Duration) {
	o := c.owner(nil)
	if o == nil {
		c.t.Fatalf("nobody serves tenant %s", c.tenant)
	}
	c.action()
	heal := func() {}
	if cut > 0 {
		for _, px := range c.proxies[o] {
			px.Freeze()
		}
		if c.net != nil {
			heal = c.net.host(o).Cut(netfault.Both, c.net.etcd...)
		}
		c.renewAllVia(o)
		time.Sleep(cut)
	}
	o.kill9()
	for _, px := range c.proxies[o] {
		px.Cut()
	}
	heal() // its namespace is where it starts again
	if cut > 0 {
		c.mu.Lock()
		c.cuts = append(c.cuts, [2]int64{c.actions[len(c.actions)-1], linearize.Now()})
		c.mu.Unlock()
	}
	c.drop(o)
	if cut > 0 {
		c.count("owner cut off from etcd, then killed (SIGKILL)")
		c.t.Logf("fault: owner %s (%s) cut off from etcd for %v, then killed with SIGKILL", o.name, c.ids[o], cut)
	} else {
		c.count("owner killed (SIGKILL)")
		c.t.Logf("fault: owner %s (%s) killed with SIGKILL", o.name, c.ids[o])
	}
	if c.owner(o) == nil {
		c.t.Fatalf("no server took over tenant %s after its owner was killed", c.tenant)
	}
	time.Sleep(leGap / 3)
	c.action()
	addr := strings.TrimPrefix(o.url, "http://")
	n := c.start(o.name+"'", addr)
	c.t.Logf("recovery: %s started again at %s (%s)", n.name, addr, c.ids[n])
}

// renewAllVia has every holder renew at once (the clients may all be
// waiting on reads, which need etcd), half of them through o: the owner
// answers what it can apply.
func (c *leCluster) renewAllVia(o *proc) {
	c.mu.Lock()
	held := make(map[string]leHolder, len(c.held))
	for n, h := range c.held {
		held[n] = h
	}
	c.mu.Unlock()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for node, h := range held {
		in := linearize.Input{Kind: linearize.Renew, Node: node, Client: h.sub, Fence: h.fence}
		p := o
		if rng.IntN(2) == 0 {
			p = c.servers()[rng.IntN(len(c.servers()))]
		}
		go c.callVia(context.Background(), p, in)
	}
}

// killOwnerAndEtcdLeader kills the shard's owner with SIGKILL while the
// etcd leader is killed: the other server takes the shard over from the
// two members left, through their election. Then the etcd member is
// restarted, and the server as killOwner does.
func (c *leCluster) killOwnerAndEtcdLeader() {
	o := c.owner(nil)
	if o == nil {
		c.t.Fatalf("nobody serves tenant %s", c.tenant)
	}
	l := etcdLeader(c.t, c.etcd)
	from := c.action()
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		c.etcd.Kill(l)
	}()
	o.kill9()
	for _, px := range c.proxies[o] {
		px.Cut()
	}
	c.drop(o)
	<-killed
	c.count("owner killed (SIGKILL) while the etcd leader is killed")
	c.t.Logf("fault: owner %s (%s) killed with SIGKILL while the etcd leader (member %d) is killed", o.name, c.ids[o], l)
	// The takeover comes before the next action: its opening is checked as
	// a restart from the kill.
	if c.owner(o) == nil {
		c.t.Fatalf("no server took over tenant %s after its owner and the etcd leader were killed", c.tenant)
	}
	time.Sleep(time.Second)
	c.recovery(from)
	c.etcd.Restart(l)
	c.t.Logf("recovery: etcd member %d restarted", l)
	time.Sleep(leGap / 3)
	c.action()
	addr := strings.TrimPrefix(o.url, "http://")
	n := c.start(o.name+"'", addr)
	c.t.Logf("recovery: %s started again at %s (%s)", n.name, addr, c.ids[n])
}

// pauseOwner stops the owner with SIGSTOP past its etcd lease, then resumes
// it.
func (c *leCluster) pauseOwner() {
	o := c.owner(nil)
	if o == nil {
		c.t.Fatalf("nobody serves tenant %s", c.tenant)
	}
	from := c.action()
	o.signal(syscall.SIGSTOP)
	c.count("owner paused past its etcd lease (SIGSTOP)")
	c.t.Logf("fault: owner %s (%s) paused with SIGSTOP for %v (its etcd lease: %v)", o.name, c.ids[o], lePause, efLeaseTTL)
	time.Sleep(lePause)
	to := c.recovery(from)
	o.signal(syscall.SIGCONT)
	c.mu.Lock()
	c.stalls = append(c.stalls, leHold{from: from, to: to})
	c.mu.Unlock()
	c.t.Logf("recovery: %s resumed", o.name)
}

// killEtcdLeader kills the etcd leader and restarts it a while later.
func (c *leCluster) killEtcdLeader() {
	l := etcdLeader(c.t, c.etcd)
	from := c.action()
	c.count("etcd leader killed")
	c.t.Logf("fault: etcd leader (member %d) killed", l)
	c.etcd.Kill(l) // returns once the member has closed, which takes seconds
	time.Sleep(time.Second)
	c.recovery(from)
	c.etcd.Restart(l)
	c.t.Logf("recovery: etcd member %d restarted", l)
}

func (c *leCluster) count(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults[kind]++
}

// servingLine is a server's log line saying it opened a shard.
var servingLine = regexp.MustCompile(`time=(\S+) level=INFO msg="serving a shard" shard=(\d+)`)

// openings are the instants (Unix ns, from the servers' logs) at which a
// server began serving the tenant's shard.
func (c *leCluster) openings() []int64 {
	c.mu.Lock()
	procs := slices.Clone(c.all)
	c.mu.Unlock()
	var out []int64
	for _, p := range procs {
		sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			m := servingLine.FindStringSubmatch(sc.Text())
			if m == nil || m[2] != strconv.Itoa(c.shard) {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, m[1])
			if err != nil {
				c.t.Fatalf("a log line's time: %v", err)
			}
			out = append(out, at.UnixNano())
		}
	}
	slices.Sort(out)
	return out
}

// history is the recorded calls ready to check, with a Restart operation on
// every node for every opening of the shard after the load began: it spans
// from the last action before the opening (its cause; the fault, when that
// action is the fault's recovery) to the opening's log line (+1 ms for the
// log's rounding). A call without an answer may have taken effect until
// leLateBound after it was given up, or after the paused server it may have
// waited in was resumed (or the cut it may have waited behind was healed);
// reads without an answer are left out. (The bound matters:
// internal/linearize lets a call whose window spans a lease's expiry see the
// lease either way, so an unknown call with an endless window would let any
// lease end early.)
func (c *leCluster) history(loadStart int64) ([]linearize.Op, linearize.Counts, int) {
	end := linearize.Now()
	c.mu.Lock()
	stalls := slices.Clone(c.stalls)
	c.mu.Unlock()
	var out []linearize.Op
	var counts linearize.Counts
	nodes := map[string]bool{}
	for _, op := range c.rec.Ops() {
		if op.Output.Result == linearize.Unknown || op.Output.Result == 0 {
			counts.Unknown++
			if op.Input.Kind == linearize.Read {
				counts.Dropped++
				continue
			}
			op.Output = linearize.Output{Result: linearize.Unknown}
			last := max(op.Return, op.Call)
			for _, h := range stalls {
				if op.Call < h.to && last > h.from {
					last = max(last, h.to)
				}
			}
			op.Return = min(end, last+int64(leLateBound))
		}
		op.Input.Call, op.Input.Return = op.Call, op.Return
		counts.Ops++
		nodes[op.Input.Node] = true
		out = append(out, op)
	}
	c.mu.Lock()
	actions := slices.Clone(c.actions)
	causes := make(map[int64]int64, len(c.causes))
	for k, v := range c.causes {
		causes[k] = v
	}
	c.mu.Unlock()
	takeovers := 0
	for _, at := range c.openings() {
		if at < loadStart {
			continue
		}
		i, _ := slices.BinarySearch(actions, at)
		if i == 0 {
			c.t.Errorf("the shard was opened at %v with no fault or recovery before it", time.Unix(0, at))
			continue
		}
		cause := actions[i-1]
		if f, ok := causes[cause]; ok {
			cause = f
		}
		takeovers++
		counts.Restarts++
		for n := range nodes {
			in := linearize.Input{Kind: linearize.Restart, Node: n, Call: cause, Return: at + int64(time.Millisecond)}
			out = append(out, linearize.Op{Input: in, Output: linearize.Output{Result: linearize.OK}, Call: in.Call, Return: in.Return})
		}
	}
	counts.Nodes = len(nodes)
	return out, counts, takeovers
}

// TestLinearizeEtcdFaults: see the top of the file.
func TestLinearizeEtcdFaults(t *testing.T) {
	scale := linearizeEtcdScale(t)
	var total linearize.Counts
	faults := map[string]int{}
	takeovers, runs := 0, 0
	for _, partitions := range []bool{false, true} {
		for run := range scale.runs {
			name := fmt.Sprintf("run-%d", run)
			if partitions {
				name = fmt.Sprintf("partitions-%d", run)
			}
			t.Run(name, func(t *testing.T) {
				counts, f, n := linearizeEtcdRun(t, run, scale, partitions)
				runs++
				total.Ops += counts.Ops
				total.Unknown += counts.Unknown
				total.Nodes += counts.Nodes
				takeovers += n
				for k, v := range f {
					faults[k] += v
				}
			})
		}
	}
	t.Logf("%d runs: %d calls checked (%d with unknown outcome), %d nodes; faults %v; %d openings of the shard checked as restarts; 0 illegal",
		runs, total.Ops, total.Unknown, total.Nodes, faults, takeovers)
}

// linearizeEtcdRun is one run: on loopback with embedded etcd members, or,
// for partitions, with every process in a network namespace of its own.
func linearizeEtcdRun(t *testing.T, run int, scale leScale, partitions bool) (linearize.Counts, map[string]int, int) {
	c := newLeCluster(t)
	var addrA, addrB string
	load := scale.load
	if partitions {
		c.net, c.etcd, c.hc = newLeNet(t)
		addrA, addrB = c.net.addrs(t)
		load = scale.splits
	} else {
		c.etcd = etcdtest.Start(t, 3)
		if !c.etcd.Embedded() {
			t.Skip("needs embedded etcd members to kill")
		}
		c.hc = &http.Client{Transport: httpClient(t).Transport, Timeout: leCallLimit + time.Second}
		addrA, addrB = spreadAddrs(t)
	}
	faults := []func(){c.cutAndKillOwner, c.killOwnerAndEtcdLeader, c.pauseOwner, c.killEtcdLeader, c.cutAndKillOwner, c.killOwner}
	cfg := linearize.DefaultConfig(linMaxAttempts)
	if partitions {
		faults = c.partitionFaults()
		cfg = leSplitConfig()
	}
	return c.runFaults(run, scale, load, addrA, addrB, faults, cfg)
}

// startPair starts servers A and B and picks as the tenant under test one
// the first server owns.
func (c *leCluster) startPair(addrA, addrB string) {
	t := c.t
	a := c.start("A", addrA)
	c.start("B", addrB)
	var victims []string
	for deadline := time.Now().Add(30 * time.Second); len(victims) == 0; {
		victims = tenantsOf(owners(t, c.hc, a), c.ids[a])
		if time.Now().After(deadline) {
			t.Fatal("A owns no tenant after 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.tenant = victims[0]
	c.shard = efShardOf(c.tenant)
}

// newLeEtcdCluster starts a three-member etcd cluster and two servers over
// it on loopback, and picks the tenant under test (startPair).
func newLeEtcdCluster(t *testing.T) *leCluster {
	c := newLeCluster(t)
	c.etcd = etcdtest.Start(t, 3)
	if !c.etcd.Embedded() {
		t.Skip("needs embedded etcd members to kill")
	}
	c.hc = &http.Client{Transport: httpClient(t).Transport, Timeout: leCallLimit + time.Second}
	c.startPair(spreadAddrs(t))
	return c
}

func newLeCluster(t *testing.T) *leCluster {
	return &leCluster{t: t, rec: linearize.NewRecorder(), toks: map[string]string{}, ids: map[*proc]string{}, held: map[string]leHolder{}, causes: map[int64]int64{}, proxies: map[*proc][]*etcdProxy{}, faults: map[string]int{}}
}

// runFaults is one run of load on two servers started at addrA and addrB,
// with a fault of faults in turn every leGap, checked by cfg's model.
func (c *leCluster) runFaults(run int, scale leScale, load time.Duration, addrA, addrB string, faults []func(), cfg linearize.Config) (linearize.Counts, map[string]int, int) {
	t := c.t
	partitions := c.net != nil
	c.startPair(addrA, addrB)
	subs := []string{}
	for i := range scale.clients {
		subs = append(subs, fmt.Sprintf("w%02d", i))
	}
	for _, s := range subs {
		c.toks[s] = mintTenant(t, c.tenant, s, "worker")
	}
	c.toks["dispatcher"] = mintTenant(t, c.tenant, "dispatcher", "dispatcher")
	c.toks["auditor"] = mintTenant(t, c.tenant, "auditor", "reader")

	ctx := context.Background()
	pool := &nodePool{prefix: fmt.Sprintf("le-%d", run)}
	for range scale.nodes {
		id, ok := c.createNode(ctx, pool.nextID)
		if !ok {
			t.FailNow()
		}
		pool.add(id)
	}

	seed := uint64(time.Now().UnixNano())
	t.Logf("run %d: tenant %s (shard %d), %d clients on %d nodes for %v through 2 servers (seed %d)", run, c.tenant, c.shard, scale.clients, scale.nodes, load, seed)
	loadStart := linearize.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leWorker(ctx, c, pool, s, rand.New(rand.NewPCG(seed, uint64(i))), stop)
		}()
	}
	start := time.Now()
	for k := 0; time.Since(start)+leGap < load; k++ {
		time.Sleep(leGap / 2)
		faults[k%len(faults)]()
		time.Sleep(time.Until(start.Add(leGap * time.Duration(k+1))))
	}
	time.Sleep(time.Until(start.Add(load)))
	close(stop)
	wg.Wait()

	// Every node read at the end: nothing acknowledged is lost.
	rng := rand.New(rand.NewPCG(seed, 999))
	for _, n := range pool.nodes() {
		c.call(ctx, rng, linearize.Input{Kind: linearize.Read, Node: n, Client: "auditor"})
	}
	c.unexpected.Range(func(k, _ any) bool {
		t.Errorf("an answer the contract does not allow: %v", k)
		return true
	})
	ops, counts, takeovers := c.history(loadStart)
	rep := linearize.Check(cfg, ops, checkTimeout, t.TempDir())
	t.Logf("run %d: %d calls (%d with unknown outcome, %d of them dropped), %d nodes, faults %v, %d openings of the shard as restarts; %v",
		run, counts.Ops, counts.Unknown, counts.Dropped, counts.Nodes, c.faults, takeovers, rep)
	if rep.Result != porcupine.Ok || os.Getenv("TETHER_LINEARIZE_KEEP") != "" {
		if f, err := os.CreateTemp("", "tether-linearize-etcd-*.json"); err == nil {
			_ = json.NewEncoder(f).Encode(ops)
			f.Close()
			t.Logf("the history is kept in %s", f.Name())
		}
	}
	if rep.Result != porcupine.Ok {
		t.Fatalf("run %d: the history is not linearizable: %v", run, rep)
	}
	linRequireEtcdVariety(t, c.rec.Ops())
	t.Logf("run %d: %d renewals were answered while their owner was cut off from etcd, before it was killed: none of them was committed", run, c.lostRenewals())
	if partitions {
		t.Logf("run %d: %d renewals were answered during a cut that was then healed", run, c.renewedWhileCut())
	}
	if takeovers == 0 {
		t.Errorf("the shard never changed hands: the run tested no takeover")
	}
	return counts, c.faults, takeovers
}

// lostRenewals counts the renewals granted wholly within a cut-then-kill
// window: the owner applied and answered them and never committed them.
func (c *leCluster) lostRenewals() int {
	c.mu.Lock()
	cuts := slices.Clone(c.cuts)
	c.mu.Unlock()
	n := 0
	for _, op := range c.rec.Ops() {
		if op.Input.Kind != linearize.Renew || op.Output.Result != linearize.OK {
			continue
		}
		for _, w := range cuts {
			if op.Call >= w[0] && op.Return <= w[1] {
				n++
			}
		}
	}
	return n
}

// createNode makes a fresh queued node through any server, retrying with a
// new id (a create without an answer may have made its node).
func (c *leCluster) createNode(ctx context.Context, id func() string) (string, bool) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for try := 0; try < 100; try++ {
		srv := c.servers()
		p := srv[rng.IntN(len(srv))]
		nid := id()
		cctx, cancel := context.WithTimeout(ctx, leCallLimit)
		res, err := p.as(c.hc, c.toks["dispatcher"]).CreateNodeWithResponse(cctx, nil, client.NodeCreate{
			ID: ptr(nid), Type: "task", Queue: ptr(linQueue), MaxAttempts: ptr(int64(linMaxAttempts)),
		})
		cancel()
		if err == nil && res.StatusCode() == http.StatusCreated {
			return nid, true
		}
		if err == nil && res.StatusCode() != http.StatusServiceUnavailable {
			c.t.Errorf("create %s: %d %s", nid, res.StatusCode(), res.Body)
			return "", false
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Errorf("could not create a node across 100 tries")
	return "", false
}

// leHolder is who believes it holds a node's lease, with which fence.
type leHolder struct {
	sub   string
	fence uint64
}

func (c *leCluster) holds(node, sub string, fence uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held[node] = leHolder{sub, fence}
}

func (c *leCluster) letGo(node, sub string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[node].sub == sub {
		delete(c.held, node)
	}
}

// leHeld is a lease a client believes it holds.
type leHeld struct {
	fence   uint64
	renewAt time.Time
}

// leWorker is a holder and a challenger at once: it renews every lease it
// holds at about half its TTL, through either server; now and then it
// releases or completes one; otherwise it claims a node (held by someone
// else, usually: a challenge) or reads one.
func leWorker(ctx context.Context, c *leCluster, pool *nodePool, sub string, rng *rand.Rand, stop <-chan struct{}) {
	held := map[string]*leHeld{}
	due := func() time.Time {
		return time.Now().Add(leHolderTTL/2 - 200*time.Millisecond + time.Duration(rng.IntN(400))*time.Millisecond)
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		var renew string
		for n, h := range held {
			if time.Now().After(h.renewAt) {
				renew = n
				break
			}
		}
		if renew != "" {
			h := held[renew]
			out := c.call(ctx, rng, linearize.Input{Kind: linearize.Renew, Node: renew, Client: sub, Fence: h.fence})
			switch out.Result {
			case linearize.OK:
				h.renewAt = due()
			case linearize.Unknown:
				h.renewAt = time.Now().Add(100 * time.Millisecond)
			default:
				delete(held, renew)
				c.letGo(renew, sub)
			}
			continue
		}
		node := pool.pick(rng)
		in := linearize.Input{Node: node, Client: sub}
		h := held[node]
		r := rng.IntN(100)
		switch {
		case h != nil && r < 3:
			in.Kind, in.Fence = linearize.Complete, h.fence
		case h != nil && r < 10:
			in.Kind, in.Fence = linearize.Release, h.fence
		case h == nil && r < 40:
			in.Kind, in.TTL = linearize.Claim, leHolderTTL
		default:
			in.Kind = linearize.Read
		}
		out := c.call(ctx, rng, in)
		switch {
		case in.Kind == linearize.Claim && out.Result == linearize.OK:
			held[node] = &leHeld{fence: out.Fence, renewAt: due()}
			c.holds(node, sub, out.Fence)
		case (in.Kind == linearize.Release || in.Kind == linearize.Complete) && out.Result != linearize.Unknown:
			delete(held, node)
			c.letGo(node, sub)
		}
		if in.Kind == linearize.Complete && out.Result == linearize.OK && pool.retire(node) {
			if id, ok := c.createNode(ctx, pool.nextID); ok {
				pool.add(id)
			}
		}
		time.Sleep(time.Duration(20+rng.IntN(40)) * time.Millisecond)
	}
}

// linRequireEtcdVariety fails the test when the load did not exercise what
// it is for: claims granted and refused, renewals granted and refused,
// releases, completions and reads.
func linRequireEtcdVariety(t *testing.T, ops []linearize.Op) {
	t.Helper()
	seen := map[string]int{}
	for _, op := range ops {
		seen[op.Input.Kind.String()+" "+op.Output.Result.String()]++
	}
	t.Logf("calls by answer: %v", seen)
	for _, want := range []string{"claim ok", "claim conflict", "renew ok", "release ok", "complete ok", "read ok"} {
		if seen[want] == 0 {
			t.Errorf("the load made no %q: it tests too little", want)
		}
	}
}

// efShardOf is the shard of tenant among efShards.
func efShardOf(tenant string) int { return cluster.ShardOfTenant(tenant, efShards) }
