package main

// Linearizability of leases against a real `tether serve` process, checked
// with porcupine through internal/linearize: concurrent clients claim, renew,
// release, complete and read a few nodes while the server is killed with
// SIGKILL and restarted; and a frozen client (a process SIGSTOPped past its
// TTL) must have every late write refused.
//
// CI runs a short version; `make linearize` sets TETHER_LINEARIZE=long, and
// TETHER_LINEARIZE_{RUNS,CLIENTS,NODES,SECONDS,RESTARTS} override each knob.

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/linearize"
)

const (
	linMaxAttempts = 1000
	linLongTTL     = time.Minute // outlives the short run; in a long one only leases nobody tends lapse
	linShortTTL    = time.Second // the deliberate ones
	linQueue       = "lin"
	checkTimeout   = time.Minute // per node
)

// linScale is the size of a linearizability run.
type linScale struct {
	runs, clients, nodes, restarts int
	load                           time.Duration
}

func linearizeScale(t *testing.T) linScale {
	s := linScale{runs: 1, clients: 6, nodes: 4, restarts: 2, load: 4 * time.Second}
	if os.Getenv("TETHER_LINEARIZE") == "long" {
		s = linScale{runs: 5, clients: 12, nodes: 6, restarts: 10, load: time.Minute}
	}
	for name, v := range map[string]*int{"RUNS": &s.runs, "CLIENTS": &s.clients, "NODES": &s.nodes, "RESTARTS": &s.restarts} {
		if env := os.Getenv("TETHER_LINEARIZE_" + name); env != "" {
			n, err := strconv.Atoi(env)
			if err != nil || n < 0 {
				t.Fatalf("TETHER_LINEARIZE_%s=%q is not a count", name, env)
			}
			*v = n
		}
	}
	if env := os.Getenv("TETHER_LINEARIZE_SECONDS"); env != "" {
		n, err := strconv.Atoi(env)
		if err != nil || n < 1 {
			t.Fatalf("TETHER_LINEARIZE_SECONDS=%q is not a positive count", env)
		}
		s.load = time.Duration(n) * time.Second
	}
	return s
}

// nodePool is the nodes the clients work on: a few active ones, replaced as
// they are completed; done ones stay pickable now and then, to check that
// they stay done.
type nodePool struct {
	mu     sync.Mutex
	active []string
	all    []string
	seq    int
	prefix string
}

func (p *nodePool) nextID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	return fmt.Sprintf("%s-%04d", p.prefix, p.seq)
}

func (p *nodePool) add(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active = append(p.active, id)
	p.all = append(p.all, id)
}

func (p *nodePool) pick(rng *rand.Rand) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rng.IntN(10) == 0 || len(p.active) == 0 {
		return p.all[rng.IntN(len(p.all))]
	}
	return p.active[rng.IntN(len(p.active))]
}

// retire takes id out of the active set; it reports whether it was there.
func (p *nodePool) retire(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.active, id)
	if i < 0 {
		return false
	}
	p.active = slices.Delete(p.active, i, i+1)
	return true
}

func (p *nodePool) nodes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.all)
}

// linWorker is one client: it picks a node and a call at random, with the
// fence it last got on that node, or a wrong one, or none. Half of its
// renewals go to the node it last held, as a worker's heartbeat does, and
// half of those that succeed are followed by a read of the node.
func linWorker(ctx context.Context, c *linCluster, pool *nodePool, sub string, rng *rand.Rand, stop <-chan struct{}) {
	fences := map[string]uint64{}
	away := map[string]time.Time{} // nodes this client leaves alone until then
	held := ""                     // the node this client was last granted or renewed
	for {
		select {
		case <-stop:
			return
		default:
		}
		node := pool.pick(rng)
		heartbeat := held != "" && rng.IntN(10) < 2
		if heartbeat {
			node = held
		}
		gone := time.Now().Before(away[node]) // only reads, which renew nothing
		in := linearize.Input{Node: node, Client: sub}
		known := fences[node]
		switch r := rng.IntN(10); {
		case r < 8:
			in.Fence = known // 0 when none is known: identity-only
		case r < 9 && known > 1:
			in.Fence = known - 1 // stale
		default:
			in.Fence = known + 1 // not yet handed out
		}
		switch r := rng.IntN(100); {
		case r < 25:
			in.Kind, in.Fence, in.TTL = linearize.Claim, 0, linLongTTL
			if rng.IntN(10) == 0 {
				in.TTL = linShortTTL
			}
		case r < 45:
			in.Kind = linearize.Renew
		case r < 58:
			in.Kind = linearize.Release
		case r < 63:
			in.Kind = linearize.Complete
		default:
			in.Kind = linearize.Read
		}
		if heartbeat {
			in.Kind, in.Fence, in.TTL = linearize.Renew, fences[node], 0
		}
		if gone {
			in.Kind, in.Fence, in.TTL = linearize.Read, 0, 0
		}
		out := c.call(ctx, in)
		switch {
		case out.Result == linearize.OK && (in.Kind == linearize.Claim || in.Kind == linearize.Renew):
			fences[node], held = out.Fence, node
		case node == held && in.Kind != linearize.Read && out.Result != linearize.Unknown:
			held = "" // released, completed or lost
		}
		if out.Result == linearize.OK && in.Kind == linearize.Renew && rng.IntN(2) == 0 {
			// A holder reads its node back: it must see the expiry it was
			// just given, never an older one.
			c.call(ctx, linearize.Input{Kind: linearize.Read, Node: node, Client: sub})
		}
		if out.Result == linearize.OK && in.Kind == linearize.Claim && in.TTL == linShortTTL && !out.Renewed {
			// A worker that dies holding a short lease: it lapses while the
			// others keep trying the node, and one of them takes it over.
			away[node] = time.Now().Add(2 * linShortTTL)
		}
		if out.Result == linearize.OK && out.Status == linearize.StatusDone && pool.retire(node) {
			if id, ok := c.createNode(ctx, pool.nextID); ok {
				pool.add(id)
			}
		}
	}
}

// TestLinearizeLeases: concurrent clients work a few nodes over HTTP while the
// server is killed with SIGKILL and restarted; after a last kill, every node
// is read; porcupine must find the whole history linearizable.
func TestLinearizeLeases(t *testing.T) {
	scale := linearizeScale(t)
	var total linearize.Counts
	for run := range scale.runs {
		// A subtest per run, so each run's servers are gone before the next.
		t.Run(fmt.Sprintf("run-%d", run), func(t *testing.T) {
			counts := linearizeRun(t, run, scale, newLinCluster)
			total.Ops += counts.Ops
			total.Unknown += counts.Unknown
			total.Restarts += counts.Restarts
			total.Nodes += counts.Nodes
		})
	}
	t.Logf("%d runs: %d calls checked (%d with unknown outcome), %d restarts, %d nodes; 0 illegal",
		scale.runs, total.Ops, total.Unknown, total.Restarts, total.Nodes)
}

// linearizeRun is one run: the load of scale on the cluster newCluster
// starts, then the check.
func linearizeRun(t *testing.T, run int, scale linScale, newCluster func(*testing.T, map[string]string) *linCluster) linearize.Counts {
	subs := map[string]string{"dispatcher": "dispatcher", "auditor": "reader"}
	for i := range scale.clients {
		subs[fmt.Sprintf("c%02d", i)] = "worker"
	}
	c := newCluster(t, subs)
	ctx := context.Background()
	pool := &nodePool{prefix: fmt.Sprintf("lin-%d", run)}
	for range scale.nodes {
		id, ok := c.createNode(ctx, pool.nextID)
		if !ok {
			t.FailNow()
		}
		pool.add(id)
	}

	if !c.restartable {
		scale.restarts = 0
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("run %d: %d clients on %d nodes through %d servers for %v with %d kill -9 restarts (seed %d)", run, scale.clients, scale.nodes, len(c.servers), scale.load, scale.restarts, seed)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range scale.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			linWorker(ctx, c, pool, fmt.Sprintf("c%02d", i), rand.New(rand.NewPCG(seed, uint64(i))), stop)
		}()
	}
	// Kill at even intervals through the load.
	every := scale.load / time.Duration(scale.restarts+1)
	start := time.Now()
	for k := range scale.restarts {
		time.Sleep(time.Until(start.Add(every * time.Duration(k+1))))
		c.restart()
	}
	time.Sleep(time.Until(start.Add(scale.load)))
	close(stop)
	wg.Wait()

	// A last kill, then every node is read: nothing acknowledged is lost.
	if c.restartable {
		c.restart()
	}
	for _, n := range pool.nodes() {
		c.call(ctx, linearize.Input{Kind: linearize.Read, Node: n, Client: "auditor"})
	}
	counts, _ := c.check(fmt.Sprintf("run %d", run))
	linRequireVariety(t, c.rec.Ops())
	t.Logf("run %d: %d leases expired during the run (the server's expired events)", run, c.expiries(ctx))
	return counts
}

// expiries counts the server's expired events: the leases that lapsed, for
// the log (-1 when the feed could not be read).
func (c *linCluster) expiries(ctx context.Context) int {
	n := 0
	var after int64
	for {
		page, err := c.first()["auditor"].ListEventsWithResponse(ctx, &client.ListEventsParams{After: &after, Limit: ptr(1000)})
		if err != nil || page.JSON200 == nil {
			c.t.Logf("reading the event feed: %v %s", err, body(page))
			return -1
		}
		for _, e := range page.JSON200.Items {
			if e.Type == client.EventTypeExpired {
				n++
			}
			after = e.Seq
		}
		if len(page.JSON200.Items) == 0 {
			return n
		}
	}
}

// linRequireVariety fails the test when the load did not exercise what it is
// for: grants, renewals, refusals of each kind, releases and completions.
func linRequireVariety(t *testing.T, ops []linearize.Op) {
	t.Helper()
	seen := map[string]int{}
	for _, op := range ops {
		seen[op.Input.Kind.String()+" "+op.Output.Result.String()]++
	}
	t.Logf("calls by answer: %v", seen)
	for _, want := range []string{"claim ok", "claim conflict", "renew ok", "renew lease_lost", "release ok", "release conflict", "complete ok", "complete lease_lost", "read ok"} {
		if seen[want] == 0 {
			t.Errorf("the load made no %q: it tests too little", want)
		}
	}
}

// TestLinearizeFrozenClient: a client process holds a lease with a 1 s TTL
// and heartbeats; it is SIGSTOPped, the lease lapses, another identity
// claims the node; the frozen process is resumed and every write it then
// attempts with its old fence must be refused, which porcupine confirms (and
// would reject, were one of them accepted).
func TestLinearizeFrozenClient(t *testing.T) {
	c := newLinCluster(t, map[string]string{"dispatcher": "dispatcher", "thief": "worker", "auditor": "reader", frozenIdentity: "worker"})
	ctx := context.Background()
	node, ok := c.createNode(ctx, func() string { return "frozen-node" })
	if !ok {
		t.FailNow()
	}

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(baseEnv(), frozenEnv+"=1", frozenURLEnv+"="+c.servers[0].url, frozenTokenEnv+"="+c.toks[frozenIdentity],
		frozenNodeEnv+"="+node, fmt.Sprintf("%s=%d", frozenTTLEnv, linShortTTL.Milliseconds()))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("error starting the frozen client: %v", err)
	}
	exited := make(chan error, 1)
	lines := make(chan frozenLine, 16)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	go func() {
		readFrozenLines(sc, lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
	})
	next := func() frozenLine {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the frozen client ended early: %v", <-exited)
			}
			if l.Error != "" {
				t.Fatalf("the frozen client: %s", l.Error)
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("no word from the frozen client in 30 s")
		}
		return frozenLine{}
	}

	fence := next().Claimed
	read := func() linearize.Output {
		return c.call(ctx, linearize.Input{Kind: linearize.Read, Node: node, Client: "auditor"})
	}
	// Let it heartbeat past one TTL, so the lease it holds is renewed ones.
	for deadline := time.Now().Add(linShortTTL + linShortTTL/2); time.Now().Before(deadline); {
		if out := read(); out.Holder != frozenIdentity || out.Fence != fence {
			t.Fatalf("the frozen client's lease is not live before the freeze: %+v", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP: %v", err)
	}
	frozenAt := time.Now()

	// The thief tries until the lapsed lease lets it in.
	var taken linearize.Output
	for deadline := time.Now().Add(20 * time.Second); ; {
		taken = c.call(ctx, linearize.Input{Kind: linearize.Claim, Node: node, Client: "thief", TTL: linLongTTL})
		if taken.Result == linearize.OK {
			break
		}
		if taken.Result != linearize.Conflict || time.Now().After(deadline) {
			t.Fatalf("the thief's claim: %+v", taken)
		}
		read()
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("taken over %v after the freeze with fence %d (the frozen one held %d)", time.Since(frozenAt).Round(time.Millisecond), taken.Fence, fence)

	resumedAt := linearize.Now()
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT: %v", err)
	}
	frozenOps := next().Ops
	if err := <-exited; err != nil {
		t.Fatalf("the frozen client: %v", err)
	}
	// The thief finishes its run; the frozen client's attempts changed nothing.
	c.call(ctx, linearize.Input{Kind: linearize.Renew, Node: node, Client: "thief", Fence: taken.Fence})
	c.call(ctx, linearize.Input{Kind: linearize.Complete, Node: node, Client: "thief", Fence: taken.Fence})
	if out := read(); out.Status != linearize.StatusDone {
		t.Errorf("the node after the thief's complete: %+v", out)
	}

	var late []int // the frozen client's writes after it was resumed
	for i, op := range frozenOps {
		c.rec.Add(op)
		if op.Call > resumedAt && op.Input.Kind != linearize.Read {
			late = append(late, i)
			if op.Output.Result == linearize.OK || op.Output.Result == linearize.Unknown {
				t.Errorf("a write of the resumed frozen client was not refused: %+v -> %+v", op.Input, op.Output)
			}
		}
	}
	if len(late) < 5 {
		t.Fatalf("the frozen client made %d writes after it was resumed, want at least 5: %+v", len(late), frozenOps)
	}
	c.check("frozen client")

	// Were any of those writes accepted, porcupine must say so.
	ops, _ := c.rec.History()
	for _, i := range late {
		want := frozenOps[i]
		forged := slices.Clone(ops)
		for j, op := range forged {
			if op.Input.Client == frozenIdentity && op.Call == want.Call {
				forged[j].Output = accepted(op, fence)
			}
		}
		if r := linearize.Check(linearize.DefaultConfig(linMaxAttempts), forged, checkTimeout, ""); r.Result != porcupine.Illegal {
			t.Errorf("porcupine did not reject the history with %v accepted: %v", want.Input.Kind, r)
		}
	}
	t.Logf("the frozen client's %d late writes were all refused; each, forged into an acceptance, makes the history illegal", len(late))
}

// accepted is the answer the server would give to op, were the frozen
// client's lease (fence) still live.
func accepted(op linearize.Op, fence uint64) linearize.Output {
	in := op.Input
	switch in.Kind {
	case linearize.Renew:
		expires := time.Unix(0, op.Return).Add(linShortTTL).UnixMilli()
		return linearize.Output{Result: linearize.OK, Holder: in.Client, Fence: fence, Expires: expires}
	case linearize.Release:
		return linearize.Output{Result: linearize.OK, Status: linearize.StatusQueued}
	default:
		return linearize.Output{Result: linearize.OK, Status: linearize.StatusDone}
	}
}
