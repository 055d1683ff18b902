package main

// Fault tests of Tether on a three-member etcd cluster: the
// owning Tether server killed with SIGKILL, an etcd member killed, a quorum
// lost and restored, and an owner paused with SIGSTOP past its etcd lease.
// The etcd members are embedded in the test process (internal/etcdtest); the
// Tether servers are real processes of the binary TestMain built. Under each
// fault, the load of etcd_ledger_test.go runs; afterwards everything
// acknowledged must be there, no event seq handed out twice, no fence issued
// twice, and every node left running claimable again with a higher fence.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/cluster"
	"github.com/tether-run/tether/internal/etcdtest"
)

// efLeaseTTL is the servers' etcd lease: how long a dead owner holds its
// shards.
const efLeaseTTL = 2 * time.Second

// efServedBy is the response header naming the server that executed a
// request (the owner of its tenant's shard, behind any forwarding).
const efServedBy = "Tether-Served-By"

// startEtcdServer starts `tether serve` over the cluster c and waits until it
// is ready.
func startEtcdServer(t *testing.T, c *etcdtest.Cluster, name string, extra ...string) *proc {
	t.Helper()
	return startEtcdServerAt(t, c, name, freeAddr(t), extra...)
}

// efShards is the fault tests' shard count.
const efShards = 8

// spreadAddrs are two free addresses such that servers there would each own
// the shards of at least two of efTenants (rendezvous placement is by
// address: random ports could give one server every tenant).
func spreadAddrs(t *testing.T) (string, string) {
	t.Helper()
	for range 1000 {
		a, b := freeAddr(t), freeAddr(t)
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
	t.Fatal("no two free addresses spread the tenants")
	return "", ""
}

// startEtcdServerAt is startEtcdServer listening at addr.
func startEtcdServerAt(t *testing.T, c *etcdtest.Cluster, name, addr string, extra ...string) *proc {
	t.Helper()
	env := serverEnv(t.TempDir(), addr, append([]string{
		"TETHER_STORE=etcd",
		"TETHER_ETCD_ENDPOINTS=" + strings.Join(c.Endpoints, ","),
		"TETHER_ETCD_PREFIX=" + c.Prefix(),
		fmt.Sprintf("TETHER_ETCD_SHARDS=%d", efShards),
		fmt.Sprintf("TETHER_ETCD_LEASE_TTL_MS=%d", efLeaseTTL.Milliseconds()),
		"TETHER_ADVERTISE_URL=http://" + addr,
	}, extra...)...)
	p := launch(t, name, addr, env, "serve")
	p.waitReady()
	return p
}

// owners asks p which server serves each tenant (the Tether-Served-By
// header of a read), waiting until every tenant has an owner.
func owners(t *testing.T, hc *http.Client, p *proc) map[string]string {
	t.Helper()
	// A probe that a paused owner holds up is a probe that failed: ask again.
	hc = &http.Client{Transport: hc.Transport, Timeout: 500 * time.Millisecond}
	out := map[string]string{}
	deadline := time.Now().Add(20 * time.Second)
	for _, tn := range efTenants {
		for {
			res, err := p.as(hc, mintTenant(t, tn, "probe", "reader")).ListEventsWithResponse(context.Background(), nil)
			if err == nil && res.StatusCode() == http.StatusOK && res.HTTPResponse.Header.Get(efServedBy) != "" {
				out[tn] = res.HTTPResponse.Header.Get(efServedBy)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("tenant %s has no owner after 20 s: %v %s", tn, err, body(res))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return out
}

// serverID is the id p reports in Tether-Served-By (on /health, and for
// the tenants it owns).
func serverID(t *testing.T, hc *http.Client, p *proc) string {
	t.Helper()
	resp, err := hc.Get(p.url + "/health")
	if err != nil {
		t.Fatalf("%s: /health: %v", p.name, err)
	}
	resp.Body.Close()
	id := resp.Header.Get(efServedBy)
	if id == "" {
		t.Fatalf("%s: /health names no server (%s header)", p.name, efServedBy)
	}
	return id
}

// startSpreadPair starts servers A and B over c, placed so that both own
// tenants, and waits until they do: it returns them, A's id and A's tenants.
func startSpreadPair(t *testing.T, c *etcdtest.Cluster, hc *http.Client) (a, b *proc, idA string, victims []string) {
	t.Helper()
	addrA, addrB := spreadAddrs(t)
	a = startEtcdServerAt(t, c, "A", addrA)
	b = startEtcdServerAt(t, c, "B", addrB)
	idA = serverID(t, hc, a)
	deadline := time.Now().Add(30 * time.Second)
	for {
		own := owners(t, hc, b)
		victims = tenantsOf(own, idA)
		if len(victims) > 0 && len(victims) < len(efTenants) {
			return a, b, idA, victims
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tenants did not spread over both servers in 30 s: %v", own)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tenantsOf are the tenants that the server with id serves.
func tenantsOf(own map[string]string, id string) []string {
	var out []string
	for tn, o := range own {
		if o == id {
			out = append(out, tn)
		}
	}
	return out
}

// Two servers over three etcd members, the load through server B; server A,
// the owner of some tenants, is killed with SIGKILL. B takes A's shards
// within the lease TTL plus a rebuild, and nothing acknowledged is lost.
func TestEtcdOwnerKilledUnderLoad(t *testing.T) {
	c := etcdtest.Start(t, 3)
	hc := httpClient(t)
	a, b, idA, victims := startSpreadPair(t, c, hc)
	t.Logf("A (%s) serves %v; B serves the rest", idA, victims)

	led := newEFLedger()
	stop := make(chan struct{})
	wg := efLoad(t, hc, func() *proc { return b }, led, stop, 2)
	time.Sleep(2 * time.Second)
	before := led.ok.Load()
	killed := time.Now()
	a.kill9()
	// Takeover: the first acknowledged write in each of A's tenants.
	for _, tn := range victims {
		for {
			led.mu.Lock()
			last := led.lastOK[tn]
			led.mu.Unlock()
			if last.After(killed) {
				break
			}
			if time.Since(killed) > efLeaseTTL+20*time.Second {
				t.Fatalf("tenant %s had no acknowledged write for %v after its owner was killed", tn, time.Since(killed))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	takeover := time.Since(killed)
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	worst, who := led.maxOutage(victims...)
	t.Logf("owner killed: %d writes acknowledged before the kill; every tenant of A served by B %v after it (lease TTL %v); the longest gap between acknowledged writes of one tenant: %v (%s)",
		before, takeover.Round(time.Millisecond), efLeaseTTL, worst.Round(time.Millisecond), who)
	if takeover > efLeaseTTL+10*time.Second {
		t.Errorf("takeover took %v, above the lease TTL (%v) + 10 s", takeover, efLeaseTTL)
	}
	efVerify(t, b, hc, led)
}

// One etcd member of three is killed under load (the leader, the worst
// case): service goes on.
func TestEtcdMemberKilledUnderLoad(t *testing.T) {
	c := etcdtest.Start(t, 3)
	if !c.Embedded() {
		t.Skip("needs embedded etcd members to kill")
	}
	a := startEtcdServer(t, c, "A")
	b := startEtcdServer(t, c, "B")
	hc := httpClient(t)
	_ = owners(t, hc, a)
	led := newEFLedger()
	stop := make(chan struct{})
	var n sync.Mutex
	i := 0
	wg := efLoad(t, hc, func() *proc { // alternate between the servers
		n.Lock()
		defer n.Unlock()
		i++
		if i%2 == 0 {
			return a
		}
		return b
	}, led, stop, 2)
	time.Sleep(2 * time.Second)
	leader := etcdLeader(t, c)
	okBefore, failedBefore := led.ok.Load(), led.failed.Load()
	killed := time.Now()
	c.Kill(leader)
	time.Sleep(4 * time.Second)
	okAfter, failedAfter := led.ok.Load()-okBefore, led.failed.Load()-failedBefore
	close(stop)
	wg.Wait()
	worst, who := led.maxOutage(efTenants...)
	t.Logf("etcd leader (member %d) killed: in the %v after it, %d writes acknowledged and %d failed; the longest gap between acknowledged writes of one tenant: %v (%s)",
		leader, time.Since(killed).Round(time.Millisecond), okAfter, failedAfter, worst.Round(time.Millisecond), who)
	if okAfter == 0 {
		t.Errorf("no write was acknowledged after one etcd member of three was killed")
	}
	if worst > 10*time.Second {
		t.Errorf("a tenant was without service for %v after one member of three was killed", worst)
	}
	efVerify(t, a, hc, led)
}

// etcdLeader is the index of the cluster's leader.
func etcdLeader(t *testing.T, c *etcdtest.Cluster) int {
	t.Helper()
	cli := c.Client()
	for i, ep := range c.Endpoints {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err == nil && st.Header.MemberId == st.Leader {
			return i
		}
	}
	t.Fatal("no etcd member says it is the leader")
	return -1
}

// Two members of three are killed: writes stop with 503 (none hangs), then
// the members come back and writes resume, nothing acknowledged lost.
func TestEtcdQuorumLostAndRestored(t *testing.T) {
	c := etcdtest.Start(t, 3)
	if !c.Embedded() {
		t.Skip("needs embedded etcd members to kill")
	}
	a := startEtcdServer(t, c, "A")
	hc := httpClient(t)
	_ = owners(t, hc, a)
	led := newEFLedger()
	stop := make(chan struct{})
	wg := efLoad(t, hc, func() *proc { return a }, led, stop, 2)
	time.Sleep(2 * time.Second)
	c.Kill(1)
	c.Kill(2)
	lost := time.Now()
	// Writes must end in 503 (not hang past the client's timeout).
	tok := mintTenant(t, efTenants[0], "probe", "dispatcher")
	var refused bool
	for time.Since(lost) < 20*time.Second {
		res, err := a.as(hc, tok).CreateNodeWithResponse(context.Background(), nil, createBody("probe-lost"))
		if err == nil && res.StatusCode() == http.StatusServiceUnavailable {
			refused = true
			break
		}
		if err == nil && res.StatusCode() == http.StatusCreated {
			t.Fatalf("a write was acknowledged with two of three etcd members down")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !refused {
		t.Fatalf("no write was answered 503 in 20 s after the quorum was lost")
	}
	t.Logf("quorum lost: writes answered 503 after %v", time.Since(lost).Round(time.Millisecond))
	okLost := led.ok.Load()
	time.Sleep(time.Second)
	if d := led.ok.Load() - okLost; d > 0 {
		// Reads of the feed are not writes; but no write may be acknowledged.
		t.Errorf("%d writes were acknowledged while the quorum was lost", d)
	}
	restored := time.Now()
	done := c.RestartAsync(2)
	c.Restart(1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var back time.Duration
	for {
		res, err := a.as(hc, tok).CreateNodeWithResponse(context.Background(), nil, createBody(fmt.Sprintf("probe-back-%d", time.Now().UnixNano())))
		if err == nil && res.StatusCode() == http.StatusCreated {
			back = time.Since(restored)
			break
		}
		if time.Since(restored) > 30*time.Second {
			t.Fatalf("writes did not resume within 30 s of the quorum's return: %v %s", err, body(res))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	t.Logf("quorum restored: writes acknowledged again %v after the members restarted", back.Round(time.Millisecond))
	efVerify(t, a, hc, led)
}

// The owner is paused with SIGSTOP past its etcd lease; the other server
// takes its shards; when the owner resumes, every write it attempts on its
// own is refused: no seq and no fence is handed out twice, and every
// request it answers is either refused or served by the new owner.
func TestEtcdPausedOwnerIsRefused(t *testing.T) {
	c := etcdtest.Start(t, 3)
	hc := httpClient(t)
	a, b, idA, victims := startSpreadPair(t, c, hc)
	// A node of A's first tenant, read back through A once A has been
	// deposed and B has changed it: A must never answer the old version.
	probeTok := mintTenant(t, victims[0], "prober", "dispatcher")
	if res, err := a.as(hc, probeTok).CreateNodeWithResponse(context.Background(), nil, client.NodeCreate{ID: ptr("stale-probe"), Type: "task", Title: ptr("before")}); err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("creating the probe: %v %s", err, body(res))
	}
	led := newEFLedger()
	stop := make(chan struct{})
	wg := efLoad(t, hc, func() *proc { return b }, led, stop, 2)
	time.Sleep(time.Second)

	a.signal(syscall.SIGSTOP)
	paused := time.Now()
	// Requests sent to A while it is paused wait in its socket; it reads
	// them when it resumes, still believing it owns its shards.
	type answer struct {
		status int
		by     string
		err    error
	}
	answers := make(chan answer, 64)
	var sent sync.WaitGroup
	slow := &http.Client{Timeout: 60 * time.Second}
	type read struct {
		status int
		title  string
		by     string
		err    error
	}
	reads := make(chan read, 8)
	for range 8 {
		sent.Add(1)
		go func() {
			defer sent.Done()
			res, err := a.as(slow, probeTok).GetNodeWithResponse(context.Background(), "stale-probe")
			if err != nil {
				reads <- read{err: err}
				return
			}
			r := read{status: res.StatusCode(), by: res.HTTPResponse.Header.Get(efServedBy)}
			if res.JSON200 != nil {
				r.title = res.JSON200.Title
			}
			reads <- r
		}()
	}
	for i := range 16 {
		tn := victims[i%len(victims)]
		sent.Add(1)
		go func() {
			defer sent.Done()
			res, err := a.as(slow, mintTenant(t, tn, "paused", "dispatcher")).CreateNodeWithResponse(context.Background(), nil, createBody(fmt.Sprintf("paused-%d", i)))
			if err != nil {
				answers <- answer{err: err}
				return
			}
			answers <- answer{status: res.StatusCode(), by: res.HTTPResponse.Header.Get(efServedBy)}
		}()
	}
	// B must own A's tenants before A resumes.
	for {
		o := owners(t, hc, b)
		moved := true
		for _, tn := range victims {
			if o[tn] == idA {
				moved = false
			}
		}
		if moved {
			break
		}
		if time.Since(paused) > efLeaseTTL+20*time.Second {
			t.Fatalf("B did not take A's tenants within %v of A's pause", time.Since(paused))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("A paused: B serves A's tenants %v after the pause", time.Since(paused).Round(time.Millisecond))
	if res, err := b.as(hc, probeTok).UpdateNodeWithApplicationMergePatchPlusJSONBodyWithResponse(context.Background(), "stale-probe", nil, client.NodePatch{Title: client.Value("after")}); err != nil || res.StatusCode() != http.StatusOK {
		t.Fatalf("changing the probe through B: %v %s", err, body(res))
	}
	time.Sleep(500 * time.Millisecond)
	a.signal(syscall.SIGCONT)
	sent.Wait()
	close(answers)
	close(reads)
	readOutcomes := map[string]int{}
	for r := range reads {
		switch {
		case r.err != nil:
			readOutcomes["no answer"]++
		case r.status == http.StatusOK && r.title != "after":
			t.Errorf("A answered a read from before it was deposed (title %q, served by %s)", r.title, r.by)
		default:
			readOutcomes[fmt.Sprintf("%d %q from %s", r.status, r.title, r.by)]++
		}
	}
	t.Logf("A resumed: 8 reads sent to it while paused: %v", readOutcomes)
	refused, forwarded := 0, 0
	outcomes := map[string]int{}
	for ans := range answers {
		switch {
		case ans.err != nil:
			refused++ // no answer: nothing acknowledged
			outcomes["no answer"]++
		case ans.status >= 500:
			refused++
			outcomes[fmt.Sprintf("%d from %s", ans.status, ans.by)]++
		case ans.by == idA:
			t.Errorf("the deposed owner acknowledged a write itself (%d) after it lost its lease", ans.status)
		default:
			forwarded++
			outcomes[fmt.Sprintf("%d from %s", ans.status, ans.by)]++
		}
	}
	t.Logf("A resumed: of 16 writes sent to it while paused, %d refused, %d served by the new owner (A was %s): %v", refused, forwarded, idA, outcomes)
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	efVerify(t, b, hc, led)
}
