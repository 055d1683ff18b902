package main

// The power-loss test: the real server on a filesystem that drops every
// write not yet fsynced at a simulated crash (internal/lazyfs, in the style
// of LazyFS), crashed and restarted under load, cycle after cycle. kill -9
// alone cannot prove an fsync: the OS page cache survives it.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/lazyfs"
	"github.com/tether-run/tether/internal/testskip"
)

const (
	plDefaultCycles = 4 // TETHER_POWERLOSS_CYCLES=20 for the full run
	plLoad          = 1500 * time.Millisecond
	plWorkers       = 8
	plReclaimMax    = 150 // nodes of earlier cycles re-claimed per cycle
	plQueue         = "pl"
	plTTL           = 10 * time.Minute // no lease expires during the test
	// plSyncLatency is what each fsync takes on lazyfs, like a real disk's
	// flush; it is the window in which a store that shows commits before
	// they are durable gets caught.
	plSyncLatency = 2 * time.Millisecond
)

// TestPowerLoss runs `tether serve` with its data directory on lazyfs, puts
// it under load (creates with ids, claims, completes, releases and re-claims
// of earlier cycles' nodes, and a reader of GET /v1/events), and crashes
// it: SIGKILL, then lazyfs.Crash, which drops everything not fsynced. After
// every crash `tether check` must pass, and after every restart:
//
//   - no acknowledged create, claim, complete or release is lost;
//   - every event a client saw before the crash is still in the log,
//     identical (same seq, type, node, holder, time and data): a seq is
//     never reused;
//   - a fence seen in a claim answer or a `claimed` event is never issued
//     again for that node to another claim.
//
// TETHER_POWERLOSS_CYCLES sets the number of crashes (default 4; 20 for the
// full run); TETHER_POWERLOSS_DIRS=strict makes a new directory entry
// durable only when its directory is fsynced (default: lenient, as ext4).
func TestPowerLoss(t *testing.T) {
	if err := lazyfs.Available(); err != nil {
		testskip.Missing(t, "FUSE", err.Error())
	}
	cycles := plDefaultCycles
	if v := os.Getenv("TETHER_POWERLOSS_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("TETHER_POWERLOSS_CYCLES=%q: want a positive number", v)
		}
		cycles = n
	}
	rule := lazyfs.Lenient
	if strings.EqualFold(os.Getenv("TETHER_POWERLOSS_DIRS"), "strict") {
		rule = lazyfs.Strict
	}

	base := t.TempDir()
	backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
	if err := os.Mkdir(backing, 0o700); err != nil {
		t.Fatal(err)
	}
	// The simulated crash needs no real fsync of the backing files; each
	// fsync takes plSyncLatency instead.
	opts := lazyfs.Options{Dirs: rule, NoBackingSync: true, SyncLatency: plSyncLatency}
	lfs, err := lazyfs.Mount(backing, mnt, opts)
	if err != nil {
		t.Fatalf("mounting lazyfs: %v", err)
	}
	// Registered before any server, so it runs after their cleanups killed
	// them.
	t.Cleanup(func() {
		if lfs != nil {
			if err := lfs.Unmount(); err != nil {
				t.Errorf("unmounting lazyfs: %v", err)
			}
		}
	})

	hc := httpClient(t)
	led := newPLLedger()
	var reclaim []string
	start := time.Now()
	checksFailed := 0
	for cycle := 1; cycle <= cycles+1; cycle++ {
		p := plStartServer(t, fmt.Sprintf("cycle %d", cycle), mnt, cycle-1)
		if cycle > 1 {
			reclaim = plVerify(t, p, hc, led, cycle-1)
			t.Logf("cycle %d: after the restart: violations %s", cycle-1, led.found.summary(cycle-1))
		}
		if cycle > cycles {
			break
		}
		led.do(func() { led.cycle = plCounts{} })
		plRunLoad(t, p, hc, led, cycle, reclaim)
		crashed := lfs
		lfs = nil
		if err := crashed.Crash(); err != nil {
			t.Fatalf("cycle %d: lazyfs crash: %v", cycle, err)
		}
		st := crashed.Stats()
		if lfs, err = lazyfs.Mount(backing, mnt, opts); err != nil {
			t.Fatalf("cycle %d: remounting lazyfs: %v", cycle, err)
		}
		if !runCheck(t, tetherBin, mnt) {
			checksFailed++
			led.found.add(cycle, "tether check failed", "after the crash")
		}
		var c plCounts
		led.do(func() { c = led.cycle })
		t.Logf("cycle %d: %s; lazyfs (%s): %d writes (%d KiB), %d fsyncs, %d dir fsyncs; the crash dropped %d dirty pages, %d size changes, %d directory entries",
			cycle, c, rule, st.Writes, st.WriteBytes>>10, st.Fsyncs, st.DirFsyncs, st.DroppedPages, st.DroppedResizes, st.DroppedEntries)
	}

	var total plCounts
	led.do(func() { total = led.total })
	t.Logf("power loss summary: %d crashes (%s directory rule) in %v: %s; %d nodes, %d events, %d fences tracked; tether check failed %d times; violations: %s",
		cycles, rule, time.Since(start).Round(time.Millisecond), total, len(led.nodes), len(led.events), len(led.fences), checksFailed, led.found.summary(0))
	if total.claims == 0 || total.completes == 0 || total.events == 0 {
		t.Errorf("the load did too little to test anything: %s", total)
	}
	kinds := make([]string, 0, len(led.found.examples))
	for k := range led.found.examples {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		t.Errorf("%s: %d in %d crashes, for example:\n  %s", k, led.found.counts[k], cycles, strings.Join(led.found.examples[k], "\n  "))
	}
}

// plRunLoad runs the load against p for plLoad, then kills p with SIGKILL
// while requests are in flight. reclaim are earlier cycles' nodes to release
// (when running) and claim again.
func plRunLoad(t *testing.T, p *proc, hc *http.Client, led *plLedger, cycle int, reclaim []string) {
	t.Helper()
	var killed atomic.Bool
	var wg sync.WaitGroup
	tokens := map[string]string{}
	token := func(sub string) string {
		if tok, ok := tokens[sub]; ok {
			return tok
		}
		tokens[sub] = mint(t, sub, "dispatcher")
		return tokens[sub]
	}
	// unexpected reports a non-2xx answer that the load never provokes.
	unexpected := func(who, op, id string, status int, body []byte) {
		if !killed.Load() {
			led.found.add(cycle, "unexpected answer", "%s %s %s: %d %s", who, op, id, status, body)
		}
	}
	ctx := context.Background()

	// send runs one request for node n: pending while it is in flight, and
	// left pending if it is never answered.
	send := func(n *plNode, op plOp, call func() (int, error)) (int, bool) {
		led.do(func() { n.pending = &op })
		status, err := call()
		if err != nil {
			led.do(func() { led.cycle.unanswered++; led.total.unanswered++ })
			return 0, false
		}
		return status, true
	}
	claim := func(c *client.ClientWithResponses, n *plNode, holder string) bool {
		var res *client.ClaimNodeResponse
		status, ok := send(n, plOp{kind: "claim", holder: holder}, func() (int, error) {
			r, err := c.ClaimNodeWithResponse(ctx, n.id, client.ClaimRequest{TTLMS: ptr(plTTL.Milliseconds())})
			res = r
			if err != nil {
				return 0, err
			}
			return r.StatusCode(), nil
		})
		if !ok {
			return false
		}
		if status != http.StatusOK || res.JSON200 == nil {
			unexpected(holder, "claim", n.id, status, res.Body)
			led.do(func() { n.pending = nil })
			return false
		}
		l := res.JSON200.Lease
		led.do(func() {
			n.pending = nil
			n.state, n.lastOp = plState{status: client.NodeStatusRunning, holder: l.By, fence: l.Fence}, "claim"
			led.cycle.claims++
			led.total.claims++
			if l.By != holder {
				led.found.add(cycle, "unexpected answer", "claim %s by %s: lease by %s", n.id, holder, l.By)
			}
			led.fence(n.id, l.Fence, l.By, "claim answer", cycle)
		})
		return true
	}
	complete := func(c *client.ClientWithResponses, n *plNode, holder string, fence int64) bool {
		var res *client.CompleteNodeResponse
		status, ok := send(n, plOp{kind: "complete", holder: holder}, func() (int, error) {
			r, err := c.CompleteNodeWithResponse(ctx, n.id, client.CompleteRequest{Fence: ptr(fence)})
			res = r
			if err != nil {
				return 0, err
			}
			return r.StatusCode(), nil
		})
		if !ok {
			return false
		}
		if status != http.StatusOK {
			unexpected(holder, "complete", n.id, status, res.Body)
			led.do(func() { n.pending = nil })
			return false
		}
		led.do(func() {
			n.pending = nil
			n.state, n.lastOp = plState{status: client.NodeStatusDone}, "complete"
			led.cycle.completes++
			led.total.completes++
		})
		return true
	}

	// claimThenComplete claims n for holder and, when done is set, completes
	// it with the fence it got; it reports whether the server was killed on
	// the way (the worker then stops).
	claimThenComplete := func(c *client.ClientWithResponses, n *plNode, holder string, done bool) (killedNow bool) {
		if !claim(c, n, holder) {
			return killed.Load()
		}
		if done {
			var fence int64
			led.do(func() { fence = n.state.fence })
			if !complete(c, n, holder, fence) && killed.Load() {
				return true
			}
		}
		return false
	}

	stop := make(chan struct{})
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}

	// Workers: fresh nodes, created with an id, claimed, half completed.
	for w := range plWorkers {
		sub := fmt.Sprintf("c%02d-w%d", cycle, w)
		c := p.as(hc, token(sub))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; !stopped(); j++ {
				n := &plNode{id: fmt.Sprintf("pl-%02d-%d-%05d", cycle, w, j), cycle: cycle}
				led.do(func() { led.nodes[n.id] = n })
				var res *client.CreateNodeResponse
				status, ok := send(n, plOp{kind: "create"}, func() (int, error) {
					r, err := c.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(n.id), Type: "task", Queue: ptr(plQueue)})
					res = r
					if err != nil {
						return 0, err
					}
					return r.StatusCode(), nil
				})
				if !ok {
					return
				}
				if status != http.StatusCreated {
					unexpected(sub, "create", n.id, status, res.Body)
					return
				}
				led.do(func() {
					n.pending, n.known = nil, true
					n.state, n.lastOp = plState{status: client.NodeStatusQueued}, "create"
					led.cycle.creates++
					led.total.creates++
				})
				if claimThenComplete(c, n, sub, j%2 == 0) {
					return
				}
			}
		}()
	}

	// The re-claimer: earlier cycles' nodes still queued (their claim was
	// never answered, or lost) or running (released by their holder first)
	// are claimed by a new identity, whose fence must be new.
	if len(reclaim) > 0 {
		sub := fmt.Sprintf("c%02d-r", cycle)
		c := p.as(hc, token(sub))
		holders := map[string]*client.ClientWithResponses{}
		led.do(func() {
			for _, id := range reclaim {
				if n := led.nodes[id]; n.state.status == client.NodeStatusRunning {
					holders[n.state.holder] = nil
				}
			}
		})
		for h := range holders {
			holders[h] = p.as(hc, token(h))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, id := range reclaim {
				if stopped() {
					return
				}
				var n *plNode
				var st plState
				led.do(func() { n = led.nodes[id]; st = n.state })
				if st.status == client.NodeStatusRunning {
					holder := holders[st.holder]
					var res *client.ReleaseNodeResponse
					status, ok := send(n, plOp{kind: "release", holder: st.holder}, func() (int, error) {
						r, err := holder.ReleaseNodeWithResponse(ctx, id, client.ReleaseRequest{Fence: ptr(st.fence)})
						res = r
						if err != nil {
							return 0, err
						}
						return r.StatusCode(), nil
					})
					if !ok {
						return
					}
					if status != http.StatusOK {
						unexpected(st.holder, "release", id, status, res.Body)
						led.do(func() { n.pending = nil })
						continue
					}
					led.do(func() {
						n.pending = nil
						n.state, n.lastOp = plState{status: client.NodeStatusQueued}, "release"
						led.cycle.releases++
						led.total.releases++
					})
				}
				if claimThenComplete(c, n, sub, i%2 == 0) {
					return
				}
			}
		}()
	}

	// The event reader: follows GET /v1/events from the last seq it saw, as
	// a client resuming after a restart would. Once armed, it crashes the
	// server the instant it has seen new events: the moment a store that
	// shows commits before they are durable would lose them.
	reader := p.as(hc, token(fmt.Sprintf("c%02d-events", cycle)))
	var armed atomic.Bool
	crashed := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		var after int64
		led.do(func() { after = led.maxSeq })
		for !stopped() {
			res, err := reader.ListEventsWithResponse(ctx, &client.ListEventsParams{After: ptr(after), Limit: ptr(1000), WaitMS: ptr(100)})
			if err != nil {
				return
			}
			if armed.Load() && res.JSON200 != nil && len(res.JSON200.Items) > 0 && !killed.Swap(true) {
				_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
				close(crashed)
			}
			if res.StatusCode() != http.StatusOK || res.JSON200 == nil {
				unexpected("events", "list", strconv.FormatInt(after, 10), res.StatusCode(), res.Body)
				return
			}
			led.do(func() {
				for _, e := range res.JSON200.Items {
					if e.Seq <= after {
						led.found.add(cycle, "event feed out of order", "after=%d answered seq %d", after, e.Seq)
					}
					after = max(after, e.Seq)
					led.event(e, cycle, "feed")
				}
				led.maxSeq = max(led.maxSeq, after)
			})
		}
	}()

	time.Sleep(plLoad)
	armed.Store(true)
	select {
	case <-crashed:
	case <-time.After(time.Second):
		// No event came: crash it anyway.
		if !killed.Swap(true) {
			p.signal(syscall.SIGKILL)
		}
	}
	if code := p.waitExit(5 * time.Second); code != -1 {
		t.Fatalf("cycle %d: tether exited with %d before SIGKILL reached it", cycle, code)
	}
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("cycle %d: the load did not stop after the server was killed", cycle)
	}
}

// plVerify checks, on the restarted server p, everything acknowledged or
// seen before the crash of cycle, then brings the ledger in line with what
// the store holds (ambiguous requests are resolved by what is there). It
// returns nodes for the next cycle to re-claim.
func plVerify(t *testing.T, p *proc, hc *http.Client, led *plLedger, cycle int) []string {
	t.Helper()
	ctx := context.Background()
	c := p.as(hc, mint(t, fmt.Sprintf("c%02d-auditor", cycle), "reader"))
	found := led.found

	// The whole event log.
	log := map[int64]client.Event{}
	var after, last int64
	for {
		res, err := c.ListEventsWithResponse(ctx, &client.ListEventsParams{After: ptr(after), Limit: ptr(1000)})
		if err != nil || res.StatusCode() != http.StatusOK || res.JSON200 == nil {
			t.Fatalf("cycle %d: reading the event log after the restart: %v %s", cycle, err, body(res))
		}
		if len(res.JSON200.Items) == 0 {
			break
		}
		for _, e := range res.JSON200.Items {
			if e.Seq <= last {
				found.add(cycle, "event log out of order", "seq %d after seq %d", e.Seq, last)
			}
			last = e.Seq
			log[e.Seq] = e
		}
		after = last
	}
	led.do(func() {
		for seq, seen := range led.events {
			e, ok := log[seq]
			switch {
			case !ok && !led.lostReported[seq]:
				led.lostReported[seq] = true
				found.add(cycle, "seen event lost", "seq %d (seen in cycle %d: %v) is not in the log after the restart (log ends at seq %d)", seq, led.eventsAt[seq], seen, last)
			case ok && toPLEvent(e) != seen:
				led.reused(seq, seen, toPLEvent(e), cycle, "log after the restart")
			}
		}
		// The feed resumes after the last seq a client saw.
		for seq, e := range log {
			led.event(e, cycle, "log after the restart")
			led.maxSeq = max(led.maxSeq, seq)
		}
	})

	// Every node of the test.
	nodes := map[string]client.Node{}
	var cursor *string
	for {
		res, err := c.ListNodesWithResponse(ctx, &client.ListNodesParams{Queue: ptr(plQueue), Limit: ptr(1000), Cursor: cursor})
		if err != nil || res.StatusCode() != http.StatusOK || res.JSON200 == nil {
			t.Fatalf("cycle %d: listing nodes after the restart: %v %s", cycle, err, body(res))
		}
		for _, n := range res.JSON200.Items {
			nodes[n.ID] = n
		}
		if res.JSON200.NextCursor == nil || len(res.JSON200.Items) == 0 {
			break
		}
		cursor = res.JSON200.NextCursor
	}

	var reclaim []string
	led.do(func() {
		for id, n := range led.nodes {
			got, exists := nodes[id]
			obs := plState{status: got.Status}
			if got.Lease != nil {
				obs.holder, obs.fence = got.Lease.By, got.Lease.Fence
			}
			if exists && got.Status == client.NodeStatusRunning && got.Lease == nil {
				found.add(cycle, "running without a lease", "%s", id)
			}
			if !exists {
				if n.known {
					found.add(cycle, "acknowledged "+n.lastOp+" lost", "%s (%v): gone after the restart", id, n.state)
				}
				delete(led.nodes, id) // an unanswered create that did not happen
				continue
			}
			if !plAllowed(n, obs) {
				kind := "acknowledged " + n.lastOp + " lost"
				if !n.known {
					kind = "unexpected node state"
				}
				pend := "none"
				if n.pending != nil {
					pend = n.pending.kind
				}
				found.add(cycle, kind, "%s: %v after the restart, want %v (unanswered at the crash: %s)", id, obs, n.state, pend)
			}
			if obs.status == client.NodeStatusRunning {
				led.fence(id, obs.fence, obs.holder, "lease after the restart", cycle)
			}
			n.known, n.state, n.pending = true, obs, nil
			if obs.status != client.NodeStatusDone {
				reclaim = append(reclaim, id)
			}
		}
	})
	for id := range nodes {
		if _, ok := led.nodes[id]; !ok {
			found.add(cycle, "unknown node", "%s exists after the restart but was never created by the test", id)
		}
	}
	// Queued ones first: they are the ones whose claim was lost or never
	// answered, whose fence is most at risk.
	rand.Shuffle(len(reclaim), func(i, j int) { reclaim[i], reclaim[j] = reclaim[j], reclaim[i] })
	sort.SliceStable(reclaim, func(i, j int) bool {
		return led.nodes[reclaim[i]].state.status == client.NodeStatusQueued && led.nodes[reclaim[j]].state.status != client.NodeStatusQueued
	})
	if len(reclaim) > plReclaimMax {
		reclaim = reclaim[:plReclaimMax]
	}
	return reclaim
}

// plStartServer starts `tether serve` on dir and waits until it is ready.
// A server that exits instead (a store that cannot open after the crash)
// fails the test with the data directory's listing.
func plStartServer(t *testing.T, name, dir string, crash int) *proc {
	t.Helper()
	addr := freeAddr(t)
	p := launch(t, name, addr, serverEnv(dir, addr), "serve")
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := hc.Get(p.url + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.exited:
			when := "on a fresh directory"
			if crash > 0 {
				when = fmt.Sprintf("after crash %d", crash)
			}
			t.Fatalf("%s: tether exited (%v) instead of serving: the store does not open %s:\n%s\ndata directory:\n%s",
				name, p.cmd.ProcessState, when, strings.TrimSpace(p.stderr.String()), plListDir(dir))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: tether was not ready within 30s", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// plListDir is "name size" per line for the files in dir.
func plListDir(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, e := range ents {
		size := int64(-1)
		if info, err := e.Info(); err == nil {
			size = info.Size()
		}
		fmt.Fprintf(&b, "  %-20s %d\n", e.Name(), size)
	}
	return b.String()
}

// plAllowed reports whether obs is a state the node may be in after a crash:
// the last acknowledged one, or the one its unanswered request would have
// made.
func plAllowed(n *plNode, obs plState) bool {
	if n.known && obs == n.state {
		return true
	}
	if n.pending == nil {
		return false
	}
	switch n.pending.kind {
	case "create":
		return obs.status == client.NodeStatusQueued
	case "claim":
		return obs.status == client.NodeStatusRunning && obs.holder == n.pending.holder && obs.fence > n.state.fence
	case "complete":
		return obs.status == client.NodeStatusDone
	case "release":
		return obs.status == client.NodeStatusQueued
	}
	return false
}
