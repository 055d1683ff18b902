package main

// The etcd fault tests' load and bookkeeping: workers in several tenants
// (so their shards spread over the servers) create, claim and complete nodes
// through whichever server a test names, event readers follow each tenant's
// feed, and the ledger keeps what was acknowledged and seen, to be checked
// against the cluster once the fault is over.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tether-run/tether/client"
)

// efTenants are the tenants of the load: enough for every server to own
// some of them.
var efTenants = []string{"t-amber", "t-birch", "t-cedar", "t-delta", "t-ember", "t-fjord", "t-gale", "t-heron"}

// mintTenant is mint for a tenant other than acme.
func mintTenant(t *testing.T, tid, sub string, roles ...string) string {
	t.Helper()
	claims := jwt.MapClaims{"sub": sub, "tid": tid, "exp": time.Now().Add(time.Hour).Unix()}
	if len(roles) > 0 {
		claims["roles"] = roles
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(procSecret))
	if err != nil {
		t.Fatalf("error signing a token: %v", err)
	}
	return tok
}

// efNode is what the clients know of one node.
type efNode struct {
	tenant  string
	created bool    // its create was acknowledged
	fences  []int64 // acknowledged claims' fences, in order
	holder  string  // the holder of the last acknowledged claim
	done    bool    // its complete was acknowledged
}

// efLedger is everything acknowledged or seen, and what broke an invariant.
type efLedger struct {
	mu     sync.Mutex
	nodes  map[string]*efNode
	events map[string]map[int64]string // tenant -> seq -> the event as first seen
	fences map[string]map[int64]int64  // node -> fence -> seq of the claimed event that carried it
	found  []string

	ok, failed atomic.Int64 // write requests answered 2xx, and not
	// lastOK and outages: per tenant, the last acknowledged write and the
	// longest time between two (a takeover shows as one).
	lastOK  map[string]time.Time
	outages map[string]time.Duration
}

func newEFLedger() *efLedger {
	l := &efLedger{
		nodes: map[string]*efNode{}, events: map[string]map[int64]string{}, fences: map[string]map[int64]int64{},
		lastOK: map[string]time.Time{}, outages: map[string]time.Duration{},
	}
	for _, tn := range efTenants {
		l.events[tn] = map[int64]string{}
	}
	return l
}

func (l *efLedger) violation(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.found) < 50 {
		l.found = append(l.found, fmt.Sprintf(format, args...))
	}
}

// acked notes an acknowledged write in tenant.
func (l *efLedger) acked(tenant string) {
	l.ok.Add(1)
	now := time.Now()
	l.mu.Lock()
	if last, ok := l.lastOK[tenant]; ok && now.Sub(last) > l.outages[tenant] {
		l.outages[tenant] = now.Sub(last)
	}
	l.lastOK[tenant] = now
	l.mu.Unlock()
}

// event records an event seen in tenant's feed: a seq seen before must name
// the same event (a seq handed out twice is a second owner's write, or a
// lost one), and a claimed event's fence must be new for its node.
func (l *efLedger) event(tenant string, e client.Event) {
	b, _ := json.Marshal(e)
	s := string(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.events[tenant][e.Seq]; ok {
		if prev != s && len(l.found) < 50 {
			l.found = append(l.found, fmt.Sprintf("%s: seq %d handed out twice:\n    %s\n    %s", tenant, e.Seq, prev, s))
		}
		return
	}
	l.events[tenant][e.Seq] = s
	if e.Type == client.EventTypeClaimed {
		f, _ := e.Data["fence"].(float64)
		fs := l.fences[e.NodeID]
		if fs == nil {
			fs = map[int64]int64{}
			l.fences[e.NodeID] = fs
		}
		if seq, ok := fs[int64(f)]; ok && seq != e.Seq && len(l.found) < 50 {
			l.found = append(l.found, fmt.Sprintf("%s: fence %d of node %s issued twice (seq %d and %d)", tenant, int64(f), e.NodeID, seq, e.Seq))
		}
		fs[int64(f)] = e.Seq
	}
}

// efLoad runs workers and event readers against the server target() names
// (asked again before every request, so a test can move the load) until
// stop is closed. Requests that fail are counted, never retried: their
// outcome is unknown, and the node is left alone.
func efLoad(t *testing.T, hc *http.Client, target func() *proc, led *efLedger, stop <-chan struct{}, workersPerTenant int) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	pause := func() {
		select {
		case <-stop:
		case <-time.After(20 * time.Millisecond):
		}
	}
	ctx := context.Background()
	for _, tn := range efTenants {
		for w := range workersPerTenant {
			sub := fmt.Sprintf("w%d", w)
			tok := mintTenant(t, tn, sub, "dispatcher")
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; !stopped(); j++ {
					c := target().as(hc, tok)
					id := fmt.Sprintf("%s-%s-%06d", tn, sub, j)
					n := &efNode{tenant: tn}
					led.mu.Lock()
					led.nodes[id] = n
					led.mu.Unlock()
					cr, err := c.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("q")})
					if err != nil || cr.StatusCode() != http.StatusCreated {
						led.failed.Add(1)
						pause()
						continue
					}
					led.mu.Lock()
					n.created = true
					led.mu.Unlock()
					led.acked(tn)
					// Claim; a third of the nodes are released and claimed
					// again, so fences of one node span the fault.
					rounds := 1 + j%3/2
					var fence int64
					claimed := false
					for r := range rounds {
						res, err := target().as(hc, tok).ClaimNodeWithResponse(ctx, id, client.ClaimRequest{TTLMS: ptr(int64(60000))})
						if err != nil || res.StatusCode() != http.StatusOK || res.JSON200 == nil {
							led.failed.Add(1)
							claimed = false
							break
						}
						fence, claimed = res.JSON200.Lease.Fence, true
						led.mu.Lock()
						if k := len(n.fences); k > 0 && fence <= n.fences[k-1] {
							led.found = append(led.found, fmt.Sprintf("%s: claim of %s answered fence %d after fence %d", tn, id, fence, n.fences[k-1]))
						}
						n.fences, n.holder = append(n.fences, fence), sub
						led.mu.Unlock()
						led.acked(tn)
						if r < rounds-1 {
							rr, err := target().as(hc, tok).ReleaseNodeWithResponse(ctx, id, client.ReleaseRequest{Fence: ptr(fence)})
							if err != nil || rr.StatusCode() != http.StatusOK {
								led.failed.Add(1)
								claimed = false
								break
							}
							led.acked(tn)
						}
					}
					if !claimed || j%4 == 3 { // every fourth node is left running
						if !claimed {
							pause()
						}
						continue
					}
					res, err := target().as(hc, tok).CompleteNodeWithResponse(ctx, id, client.CompleteRequest{Fence: ptr(fence)})
					if err != nil || res.StatusCode() != http.StatusOK {
						led.failed.Add(1)
						pause()
						continue
					}
					led.mu.Lock()
					n.done = true
					led.mu.Unlock()
					led.acked(tn)
				}
			}()
		}
		// The feed reader of tn.
		tok := mintTenant(t, tn, "feed", "reader")
		wg.Add(1)
		go func() {
			defer wg.Done()
			var after int64
			for !stopped() {
				res, err := target().as(hc, tok).ListEventsWithResponse(ctx, &client.ListEventsParams{After: ptr(after), Limit: ptr(1000), WaitMS: ptr(100)})
				if err != nil || res.StatusCode() != http.StatusOK || res.JSON200 == nil {
					pause()
					continue
				}
				for _, e := range res.JSON200.Items {
					if e.Seq <= after {
						led.violation("%s: the feed after %d answered seq %d", tn, after, e.Seq)
					}
					after = max(after, e.Seq)
					led.event(tn, e)
				}
			}
		}()
	}
	return &wg
}

// efVerify checks, through p, everything the ledger holds: the whole event
// log of every tenant (in order, every event seen still there and the same),
// every acknowledged node (there, done if its complete was acknowledged),
// and then claims again every node left running, whose new fence must be
// above every fence handed out for it. It fails the test on any violation.
func efVerify(t *testing.T, p *proc, hc *http.Client, led *efLedger) {
	t.Helper()
	ctx := context.Background()
	reads := settledReads(hc)
	for _, tn := range efTenants {
		c := p.as(reads, mintTenant(t, tn, "auditor", "reader"))
		var after int64
		for {
			res, err := c.ListEventsWithResponse(ctx, &client.ListEventsParams{After: ptr(after), Limit: ptr(1000)})
			if err != nil || res.StatusCode() != http.StatusOK || res.JSON200 == nil {
				t.Fatalf("%s: reading the event log: %v %s", tn, err, body(res))
			}
			if len(res.JSON200.Items) == 0 {
				break
			}
			for _, e := range res.JSON200.Items {
				if e.Seq <= after {
					led.violation("%s: the event log has seq %d after %d", tn, e.Seq, after)
				}
				after = e.Seq
				led.event(tn, e)
			}
		}
		led.mu.Lock()
		for seq := range led.events[tn] {
			if seq > after {
				led.found = append(led.found, fmt.Sprintf("%s: event %d was seen, but the log ends at %d", tn, seq, after))
			}
		}
		led.mu.Unlock()
	}
	led.mu.Lock()
	ids := make([]string, 0, len(led.nodes))
	for id, n := range led.nodes {
		if n.created {
			ids = append(ids, id)
		}
	}
	led.mu.Unlock()
	sort.Strings(ids)
	reclaimed := 0
	for _, id := range ids {
		led.mu.Lock()
		n := led.nodes[id]
		tn, done, fences, holder := n.tenant, n.done, append([]int64(nil), n.fences...), n.holder
		led.mu.Unlock()
		c := p.as(reads, mintTenant(t, tn, "auditor", "reader"))
		res, err := c.GetNodeWithResponse(ctx, id)
		if err != nil || res.StatusCode() != http.StatusOK || res.JSON200 == nil {
			led.violation("%s: acknowledged node %s is gone: %v %s", tn, id, err, body(res))
			continue
		}
		got := res.JSON200
		if done && got.Status != client.NodeStatusDone {
			led.violation("%s: node %s was completed, and is %s", tn, id, got.Status)
		}
		if done || len(fences) == 0 || got.Status != client.NodeStatusRunning || got.Lease == nil || got.Lease.By != holder {
			continue
		}
		// Running for the last acknowledged holder: release and claim again.
		hold := p.as(hc, mintTenant(t, tn, holder, "dispatcher"))
		rel, err := hold.ReleaseNodeWithResponse(ctx, id, client.ReleaseRequest{Fence: ptr(got.Lease.Fence)})
		if err != nil || rel.StatusCode() != http.StatusOK {
			t.Fatalf("%s: releasing %s: %v %s", tn, id, err, body(rel))
		}
		cl, err := p.as(hc, mintTenant(t, tn, "reclaimer", "dispatcher")).ClaimNodeWithResponse(ctx, id, client.ClaimRequest{TTLMS: ptr(int64(60000))})
		if err != nil || cl.StatusCode() != http.StatusOK || cl.JSON200 == nil {
			t.Fatalf("%s: claiming %s again: %v %s", tn, id, err, body(cl))
		}
		reclaimed++
		f := cl.JSON200.Lease.Fence
		led.mu.Lock()
		for seen := range led.fences[id] {
			if f <= seen {
				led.found = append(led.found, fmt.Sprintf("%s: node %s claimed again with fence %d, not above %d handed out before", tn, id, f, seen))
			}
		}
		for _, seen := range fences {
			if f <= seen {
				led.found = append(led.found, fmt.Sprintf("%s: node %s claimed again with fence %d, not above the acknowledged %d", tn, id, f, seen))
			}
		}
		led.mu.Unlock()
	}
	led.mu.Lock()
	defer led.mu.Unlock()
	events := 0
	for _, m := range led.events {
		events += len(m)
	}
	t.Logf("verified: %d nodes acknowledged, %d events, %d writes acknowledged, %d failed (outcome unknown), %d nodes claimed again after the fault",
		len(ids), events, led.ok.Load(), led.failed.Load(), reclaimed)
	if len(ids) == 0 || events == 0 {
		t.Errorf("the load did too little to test anything")
	}
	if len(led.found) > 0 {
		t.Errorf("%d violations:\n  %s", len(led.found), strings.Join(led.found, "\n  "))
	}
}

// maxOutage is the longest time, over tenants, between two acknowledged
// writes of one tenant.
func (l *efLedger) maxOutage(tenants ...string) (time.Duration, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var worst time.Duration
	var who string
	for _, tn := range tenants {
		if d := l.outages[tn]; d > worst {
			worst, who = d, tn
		}
	}
	return worst, who
}

// createBody is a task in queue q with id.
func createBody(id string) client.NodeCreate {
	return client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("q")}
}

// settledReads is hc whose GETs are sent again while the cluster answers
// 503 (a shard between owners, as when a paused owner resumes and its
// shards go back to it), for up to 30 s: what efVerify checks is the answer
// of a settled cluster, not the handover, which the fault tests check
// themselves. Writes are never sent again.
func settledReads(hc *http.Client) *http.Client {
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := *hc
	c.Transport = readAgain{base}
	return &c
}

type readAgain struct{ base http.RoundTripper }

func (r readAgain) RoundTrip(req *http.Request) (*http.Response, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := r.base.RoundTrip(req)
		if err != nil || req.Method != http.MethodGet || res.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return res, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		time.Sleep(100 * time.Millisecond) // polling the cluster's handover: no signal reaches the test
	}
}
