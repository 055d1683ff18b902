package main

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
)

// The durability tests deliberately do not use GET /v1/events (not built yet):
// every check reads nodes and leases.

const claimTTL = 60 * time.Second

// claimRec is an acknowledged claim.
type claimRec struct {
	holder string
	fence  int64
}

// ledger records what the server acknowledged (2xx) and what was sent but
// never answered (it may or may not have been applied).
type ledger struct {
	mu            sync.Mutex
	owner         map[string]string // created id -> the worker that created it
	created       map[string]bool
	claimed       map[string]claimRec
	completed     map[string]bool
	completeTried map[string]bool // a complete was sent; acknowledged or not
	unanswered    int
}

func newLedger() *ledger {
	return &ledger{
		owner: map[string]string{}, created: map[string]bool{}, claimed: map[string]claimRec{},
		completed: map[string]bool{}, completeTried: map[string]bool{},
	}
}

func (l *ledger) do(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// TestKill9LosesNoAcknowledgedWrite runs create → claim → complete under
// concurrent load, kills the server with SIGKILL while requests are in flight,
// restarts it on the same data dir and checks that every write the server
// acknowledged is there, that surviving leases are live for their holder with
// the same fence (given a full TTL afresh), and that fences keep increasing
// across the restart.
func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	dir := t.TempDir()
	p1 := startServer(t, "before kill -9", dir)
	hc := httpClient(t)

	const workers = 16
	led := newLedger()
	var inflight atomic.Int64
	var killed atomic.Bool
	var wg sync.WaitGroup
	hardStop := time.Now().Add(10 * time.Second) // in case the kill never lands

	for w := range workers {
		sub := fmt.Sprintf("w%02d", w)
		c := p1.as(hc, mint(t, sub, "dispatcher"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			// bad reports a non-2xx answer; the load never provokes one.
			bad := func(op, id string, status int, body []byte) {
				if !killed.Load() {
					t.Errorf("%s %s %s: %d %s", sub, op, id, status, body)
				}
			}
			for j := 0; time.Now().Before(hardStop); j++ {
				id := fmt.Sprintf("k-%s-%06d", sub, j)

				inflight.Add(1)
				cr, err := c.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("q")})
				inflight.Add(-1)
				if err != nil {
					led.do(func() { led.unanswered++ })
					return // the server is gone
				}
				if cr.StatusCode() != http.StatusCreated {
					bad("create", id, cr.StatusCode(), cr.Body)
					return
				}
				led.do(func() { led.created[id], led.owner[id] = true, sub })

				inflight.Add(1)
				cl, err := c.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{TTLMS: ptr(claimTTL.Milliseconds())})
				inflight.Add(-1)
				if err != nil {
					led.do(func() { led.unanswered++ })
					return
				}
				if cl.StatusCode() != http.StatusOK || cl.JSON200 == nil {
					bad("claim", id, cl.StatusCode(), cl.Body)
					return
				}
				lease := cl.JSON200.Lease
				if lease.By != sub || cl.JSON200.Renewed {
					t.Errorf("claim %s: lease by %q renewed=%v, want by %q, a new lease", id, lease.By, cl.JSON200.Renewed, sub)
				}
				led.do(func() { led.claimed[id] = claimRec{holder: sub, fence: lease.Fence} })

				if j%2 != 0 {
					continue
				}
				led.do(func() { led.completeTried[id] = true })
				inflight.Add(1)
				co, err := c.CompleteNodeWithResponse(ctx, id, client.CompleteRequest{Fence: ptr(lease.Fence)})
				inflight.Add(-1)
				if err != nil {
					led.do(func() { led.unanswered++ })
					return
				}
				if co.StatusCode() != http.StatusOK {
					bad("complete", id, co.StatusCode(), co.Body)
					return
				}
				led.do(func() { led.completed[id] = true })
			}
		}()
	}

	time.Sleep(2 * time.Second)
	// Kill while requests are in flight (with 16 busy workers there nearly
	// always are; wait a little for one if not).
	for deadline := time.Now().Add(time.Second); inflight.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
	inflightAtKill := inflight.Load()
	killed.Store(true)
	p1.kill9()

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the load goroutines did not stop after the server was killed")
	}
	if inflightAtKill == 0 {
		t.Errorf("no request was in flight at the kill")
	}

	var running, ambiguous int
	for id := range led.claimed {
		if led.completeTried[id] && !led.completed[id] {
			ambiguous++
		} else if !led.completed[id] {
			running++
		}
	}
	t.Logf("acknowledged before kill -9: %d creates, %d claims, %d completes (%d claims left running); "+
		"%d requests in flight at the kill, %d never answered, %d completes unanswered",
		len(led.created), len(led.claimed), len(led.completed), running,
		inflightAtKill, led.unanswered, ambiguous)
	if len(led.completed) == 0 || running == 0 {
		t.Fatalf("the load did too little to test anything")
	}
	if t.Failed() {
		t.FailNow()
	}
	// The records the kill left agree with each other (and the open that
	// check does recovers the log, as a restart would).
	if out, err := exec.Command(tetherBin, "check", dir).CombinedOutput(); err != nil {
		t.Fatalf("tether check after kill -9: %v\n%s", err, out)
	} else {
		t.Logf("tether check after kill -9: %s", strings.TrimSpace(string(out)))
	}

	restartAt := time.Now()
	p2 := startServer(t, "after kill -9", dir)
	thief := p2.as(hc, mint(t, "thief", "worker"))
	holders := map[string]*client.ClientWithResponses{}
	for w := range workers {
		sub := fmt.Sprintf("w%02d", w)
		holders[sub] = p2.as(hc, mint(t, sub, "dispatcher"))
	}
	reader := p2.as(hc, mint(t, "auditor", "reader"))

	ids := make([]string, 0, len(led.created))
	for id := range led.created {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var verified, failures atomic.Int64
	const maxReported = 25
	// fail reports the first maxReported failures and counts the rest.
	fail := func(format string, args ...any) {
		if failures.Add(1) <= maxReported {
			t.Errorf(format, args...)
		}
	}
	check := func(id string) {
		ctx := context.Background()
		g, err := reader.GetNodeWithResponse(ctx, id)
		if err != nil {
			fail("get %s: %v", id, err)
			return
		}
		if g.StatusCode() != http.StatusOK || g.JSON200 == nil {
			fail("acknowledged create %s is lost: GET answered %d %s", id, g.StatusCode(), g.Body)
			return
		}
		n := g.JSON200
		claim, claimed := led.claimed[id]
		switch {
		case led.completed[id]:
			if n.Status != client.NodeStatusDone {
				fail("acknowledged complete of %s is lost: status %q", id, n.Status)
			}
		case claimed && led.completeTried[id]:
			// The complete was sent but never answered: either outcome.
			if n.Status == client.NodeStatusDone {
				return
			}
			if n.Status != client.NodeStatusRunning || n.Lease == nil || n.Lease.By != claim.holder || n.Lease.Fence != claim.fence {
				fail("%s (claimed by %s fence %d, complete unanswered): status %q lease %+v", id, claim.holder, claim.fence, n.Status, n.Lease)
			}
		case claimed:
			if n.Status != client.NodeStatusRunning || n.Lease == nil {
				fail("acknowledged claim of %s by %s is lost: status %q lease %+v", id, claim.holder, n.Status, n.Lease)
				return
			}
			l := n.Lease
			if l.By != claim.holder || l.Fence != claim.fence {
				fail("%s: lease by %s fence %d after restart, want by %s fence %d", id, l.By, l.Fence, claim.holder, claim.fence)
				return
			}
			// A full TTL afresh from the restart, not the stored expiry.
			if earliest := restartAt.Add(claimTTL - 10*time.Millisecond); l.ExpiresAt.Before(earliest) {
				fail("%s: lease expires at %v, want a full TTL from the restart (not before %v)", id, l.ExpiresAt, earliest)
			}
			if l.ExpiresAt.UnixMilli() != l.Expires {
				fail("%s: expires %d != expires_at %v", id, l.Expires, l.ExpiresAt)
			}
			holder := holders[claim.holder]
			rn, err := holder.RenewLeaseWithResponse(ctx, id, client.RenewRequest{Fence: ptr(claim.fence)})
			if err != nil || rn.StatusCode() != http.StatusOK || rn.JSON200 == nil {
				fail("%s: the holder cannot renew its surviving lease (fence %d): %v %s", id, claim.fence, err, body(rn))
				return
			}
			if rn.JSON200.Lease.Fence != claim.fence || rn.JSON200.Lease.By != claim.holder {
				fail("%s: renew answered lease %+v", id, rn.JSON200.Lease)
			}
			rl, err := holder.ReleaseNodeWithResponse(ctx, id, client.ReleaseRequest{Fence: ptr(claim.fence)})
			if err != nil || rl.StatusCode() != http.StatusOK {
				fail("%s: release: %v %s", id, err, body(rl))
				return
			}
			tc, err := thief.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{TTLMS: ptr(claimTTL.Milliseconds())})
			if err != nil || tc.StatusCode() != http.StatusOK || tc.JSON200 == nil {
				fail("%s: claim by another identity after release: %v %s", id, err, body(tc))
				return
			}
			if got := tc.JSON200.Lease.Fence; got <= claim.fence {
				fail("%s: fence %d after the restart is not above the fence %d before it", id, got, claim.fence)
			}
			verified.Add(1)
		default:
			// The claim was never answered: queued, or running for its creator.
			switch n.Status {
			case client.NodeStatusQueued:
			case client.NodeStatusRunning:
				if n.Lease == nil || n.Lease.By != led.owner[id] {
					fail("%s: running with lease %+v, want one by %s", id, n.Lease, led.owner[id])
				}
			default:
				fail("%s: status %q, want queued (or running: its claim was unanswered)", id, n.Status)
			}
		}
	}

	work := make(chan string)
	var vg sync.WaitGroup
	for range workers {
		vg.Add(1)
		go func() {
			defer vg.Done()
			for id := range work {
				check(id)
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	vg.Wait()
	if n := failures.Load(); n > maxReported {
		t.Errorf("... and %d more failures (%d in all)", n-maxReported, n)
	}
	t.Logf("after restart: %d nodes checked, %d surviving leases renewed by their holder and re-claimed with a higher fence (restart + checks took %v)",
		len(ids), verified.Load(), time.Since(restartAt).Round(time.Millisecond))
}

// body is a response's body for messages, or "" when there is none.
func body(r interface{ StatusCode() int }) string {
	switch v := r.(type) {
	case *client.RenewLeaseResponse:
		if v != nil {
			return fmt.Sprintf("%d %s", v.StatusCode(), v.Body)
		}
	case *client.ReleaseNodeResponse:
		if v != nil {
			return fmt.Sprintf("%d %s", v.StatusCode(), v.Body)
		}
	case *client.ClaimNodeResponse:
		if v != nil {
			return fmt.Sprintf("%d %s", v.StatusCode(), v.Body)
		}
	case *client.ListEventsResponse:
		if v != nil {
			return fmt.Sprintf("%d %s", v.StatusCode(), v.Body)
		}
	case *client.ListNodesResponse:
		if v != nil {
			return fmt.Sprintf("%d %s", v.StatusCode(), v.Body)
		}
	}
	return ""
}

// TestKill9NoNodeStuck kills the server while 50 short leases are live and
// checks that after the restart, with nobody renewing, the reaper puts every
// node back in its queue: none stays running.
func TestKill9NoNodeStuck(t *testing.T) {
	const nodes = 50
	const ttl = 2 * time.Second
	dir := t.TempDir()
	p1 := startServer(t, "before kill -9", dir)
	hc := httpClient(t)
	disp := p1.as(hc, mint(t, "head", "dispatcher"))
	worker := p1.as(hc, mint(t, "alice", "worker"))

	ids := make([]string, nodes)
	var wg sync.WaitGroup
	for i := range ids {
		ids[i] = fmt.Sprintf("stuck-%02d", i)
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			ctx := context.Background()
			cr, err := disp.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("q")})
			if err != nil || cr.StatusCode() != http.StatusCreated {
				t.Errorf("create %s: %v", id, err)
				return
			}
			cl, err := worker.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{TTLMS: ptr(ttl.Milliseconds())})
			if err != nil || cl.StatusCode() != http.StatusOK {
				t.Errorf("claim %s: %v %s", id, err, body(cl))
			}
		}(ids[i])
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	p1.kill9()

	launchedAt := time.Now()
	p2 := startServer(t, "after kill -9", dir)
	ready := time.Now()
	reader := p2.as(hc, mint(t, "auditor", "reader"))

	// The leases get their full TTL afresh at the restart, so the reaper
	// requeues them about ttl + one reaper interval after it; allow slack,
	// but never wait more than 6 s.
	deadline := ready.Add(6 * time.Second)
	pending := map[string]client.NodeStatus{}
	for _, id := range ids {
		pending[id] = client.NodeStatusRunning
	}
	for len(pending) > 0 && time.Now().Before(deadline) {
		for id := range pending {
			g, err := reader.GetNodeWithResponse(context.Background(), id)
			if err != nil {
				t.Fatalf("get %s after restart: %v", id, err)
			}
			if g.StatusCode() != http.StatusOK || g.JSON200 == nil {
				t.Fatalf("get %s after restart: %d %s", id, g.StatusCode(), g.Body)
			}
			n := g.JSON200
			switch {
			case n.Status == client.NodeStatusQueued && n.Lease == nil:
				// The restart gave every lease its full TTL afresh, so none
				// may be requeued sooner than that after the launch.
				if seen := time.Since(launchedAt); seen < ttl {
					t.Errorf("%s requeued %v after the restart began, before its fresh %v TTL ran out", id, seen.Round(time.Millisecond), ttl)
				}
				delete(pending, id)
			case n.Status == client.NodeStatusRunning:
				pending[id] = n.Status
			default:
				t.Fatalf("%s: status %q lease %+v, want running then queued", id, n.Status, n.Lease)
			}
		}
		if len(pending) > 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	took := time.Since(ready)
	if len(pending) > 0 {
		stuck := make([]string, 0, len(pending))
		for id, st := range pending {
			stuck = append(stuck, id+"="+string(st))
		}
		sort.Strings(stuck)
		t.Fatalf("%d of %d nodes still not queued %v after the restart: %v", len(stuck), nodes, took.Round(time.Millisecond), stuck)
	}
	t.Logf("all %d nodes requeued %v after the restart (ttl %v, reaper interval %v)", nodes, took.Round(time.Millisecond), ttl, reaperInterval)
}
