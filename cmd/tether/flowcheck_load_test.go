package main

// The load of the flow-control checks (flowcheck_test.go runs it on Badger
// with kill -9 restarts, flowcheck_etcd_test.go on etcd with owner kills):
// workers claim nodes carrying concurrency keys by id, by claim-next, by a
// claims batch and by complete with next; hold them a while, renewing at
// half their TTL; then complete, release, or abandon them to expiry. Every
// grant, renewal and end is recorded for internal/flowcheck.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/flowcheck"
)

const (
	flowQueue   = "flow"
	flowTTL     = 1500 * time.Millisecond // renewed at half of it; an abandoned lease lapses after it
	flowBacklog = 60                      // queued nodes the feeder keeps ahead of the workers
	flowCall    = 5 * time.Second         // a call's client timeout: then its outcome is unknown
)

// flowLimits are the limits every run sets: a prefix limit bounding each
// repository key, an exact limit and a start rate on a provider key, a
// start rate for each team key under a prefix, and the queue's start rate.
var flowLimits = flowcheck.Limits{
	MaxRunning: map[string]int{"repo:*": 2, "provider:a": 3},
	KeyRates:   map[string]flowcheck.Rate{"provider:a": {PerSecond: 8, Burst: 3}, "team:*": {PerSecond: 4, Burst: 2}},
	QueueRates: map[string]flowcheck.Rate{flowQueue: {PerSecond: 40, Burst: 8}},
}

// flowKeys are the concurrency keys of the seq-th node: four repositories,
// the provider on every other node, a team on every third.
func flowKeys(seq int) []string {
	keys := []string{fmt.Sprintf("repo:r%d", seq%4)}
	if seq%2 == 0 {
		keys = append(keys, "provider:a")
	}
	if seq%3 == 0 {
		keys = append(keys, fmt.Sprintf("team:t%d", seq%2))
	}
	return keys
}

// flowScale is the size of a flow-control run.
type flowScale struct {
	runs, workers int
	load, every   time.Duration // every: between faults
}

// flowScaleOf is CI's scale (def), or the long one under TETHER_LINEARIZE=long;
// TETHER_FLOWCHECK_{RUNS,WORKERS,SECONDS} override each knob.
func flowScaleOf(t *testing.T, def, long flowScale) flowScale {
	s := def
	if os.Getenv("TETHER_LINEARIZE") == "long" {
		s = long
	}
	for name, v := range map[string]*int{"RUNS": &s.runs, "WORKERS": &s.workers} {
		if env := os.Getenv("TETHER_FLOWCHECK_" + name); env != "" {
			n, err := strconv.Atoi(env)
			if err != nil || n < 1 {
				t.Fatalf("TETHER_FLOWCHECK_%s=%q is not a positive count", name, env)
			}
			*v = n
		}
	}
	if env := os.Getenv("TETHER_FLOWCHECK_SECONDS"); env != "" {
		n, err := strconv.Atoi(env)
		if err != nil || n < 1 {
			t.Fatalf("TETHER_FLOWCHECK_SECONDS=%q is not a positive count", env)
		}
		s.load = time.Duration(n) * time.Second
	}
	return s
}

// flowReach runs f with a client for identity sub of a server that serves
// the tenant now (or did a moment ago).
type flowReach func(sub string, f func(*client.ClientWithResponses))

// flowRun is one run's load and its record.
type flowRun struct {
	t      *testing.T
	reach  flowReach
	prefix string
	rec    flowcheck.Recorder

	mu      sync.Mutex
	ids     []string // every node id a create was sent for, in order
	created []string // the ids whose create was answered 201, in order
	keys    map[string][]string
	seen    map[string]int // answer -> how many ("409 concurrency_limited", "204 start_rate_limited", ...)
	done    atomic.Int64   // completions answered
	odd     sync.Map       // answers the contract does not allow -> true
	ready   atomic.Int64   // nodes created
}

func newFlowRun(t *testing.T, reach flowReach, prefix string) *flowRun {
	return &flowRun{t: t, reach: reach, prefix: prefix, keys: map[string][]string{}, seen: map[string]int{}}
}

// setLimits sets flowLimits as the dispatcher, retrying across an
// election.
func (r *flowRun) setLimits() {
	ctx := context.Background()
	for _, key := range patterns(flowLimits) {
		body := map[string]any{}
		if n, ok := flowLimits.MaxRunning[key]; ok {
			body["max_running"] = n
		}
		if rt, ok := flowLimits.KeyRates[key]; ok {
			body["rate"] = rt
		}
		r.retry("PUT /v1/limits/"+key, func(c *client.ClientWithResponses) (int, []byte, error) {
			res, err := c.PutLimitWithBodyWithResponse(ctx, key, "application/json", jsonBody(body))
			if err != nil {
				return 0, nil, err
			}
			return res.StatusCode(), res.Body, nil
		})
	}
	for q, rt := range flowLimits.QueueRates {
		r.retry("PATCH /v1/queues/"+q, func(c *client.ClientWithResponses) (int, []byte, error) {
			res, err := c.UpdateQueueWithBodyWithResponse(ctx, q, "application/json", jsonBody(map[string]any{"rate": rt}))
			if err != nil {
				return 0, nil, err
			}
			return res.StatusCode(), res.Body, nil
		})
	}
}

// patterns are the keys and prefixes limits sets something on, in order.
func patterns(l flowcheck.Limits) []string {
	var out []string
	for k := range l.MaxRunning {
		out = append(out, k)
	}
	for k := range l.KeyRates {
		if _, ok := l.MaxRunning[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// retry sends a dispatcher's call until it is answered 200, for up to 30 s
// (a restart or a takeover may be under way).
func (r *flowRun) retry(what string, send func(*client.ClientWithResponses) (int, []byte, error)) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var status int
		var body []byte
		var err error
		r.reach("dispatcher", func(c *client.ClientWithResponses) { status, body, err = send(c) })
		switch {
		case err == nil && status == http.StatusOK:
			return
		case err == nil && status != http.StatusServiceUnavailable:
			r.t.Fatalf("%s: %d %s", what, status, body)
		case time.Now().After(deadline):
			r.t.Fatalf("%s: no answer in 30 s: %v %d %s", what, err, status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jsonBody(v any) *strings.Reader {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return strings.NewReader(string(b))
}

// feed creates nodes as the dispatcher, keeping flowBacklog of them ahead of
// the completions, until stop.
func (r *flowRun) feed(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		if r.ready.Load()-r.done.Load() >= flowBacklog {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		r.create()
	}
}

// create sends one create (a new id each time: one without an answer may
// have made its node).
func (r *flowRun) create() {
	r.mu.Lock()
	seq := len(r.ids)
	id := fmt.Sprintf("%s-%05d", r.prefix, seq)
	keys := flowKeys(seq)
	r.ids = append(r.ids, id)
	r.keys[id] = keys
	r.mu.Unlock()
	body := map[string]any{"id": id, "type": "task", "queue": flowQueue, "max_attempts": linMaxAttempts, "concurrency_keys": keys}
	ctx, cancel := context.WithTimeout(context.Background(), flowCall)
	defer cancel()
	r.reach("dispatcher", func(c *client.ClientWithResponses) {
		res, err := c.CreateNodeWithBodyWithResponse(ctx, nil, "application/json", jsonBody(body))
		switch {
		case err != nil:
			time.Sleep(50 * time.Millisecond) // a restart
		case res.StatusCode() == http.StatusCreated:
			r.ready.Add(1)
			r.mu.Lock()
			r.created = append(r.created, id)
			r.mu.Unlock()
		case res.StatusCode() == http.StatusServiceUnavailable:
			time.Sleep(50 * time.Millisecond)
		default:
			r.odd.Store(fmt.Sprintf("create: %d %s", res.StatusCode(), res.Body), true)
		}
	})
}

// keysOf are the keys node was created with.
func (r *flowRun) keysOf(node string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys[node]
}

// recent is one of the last nodes created, for a claim by id.
func (r *flowRun) recent(rng *rand.Rand) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.created) == 0 {
		return ""
	}
	return r.created[max(0, len(r.created)-1-rng.IntN(2*flowBacklog))]
}

func (r *flowRun) count(answer string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[answer]++
}

// flowHeld is a lease a worker holds.
type flowHeld struct {
	fence           uint64
	renewAt, finish time.Time
}

// flowWorker is one worker: at most two leases at a time, each held 30 ms
// to 1 s, renewed at half its TTL; a free slot is filled by claim-next,
// a claims batch, or a claim by id of a recent node.
type flowWorker struct {
	r    *flowRun
	sub  string
	rng  *rand.Rand
	held map[string]*flowHeld
}

func (w *flowWorker) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		now := time.Now()
		for node, h := range w.held {
			switch {
			case now.After(h.finish):
				w.finish(node, h)
			case now.After(h.renewAt):
				w.renew(node, h)
			}
		}
		if len(w.held) < 2 {
			switch n := w.rng.IntN(10); {
			case n < 4:
				w.claimNext()
			case n < 6:
				w.claimMany(2 - len(w.held))
			default:
				if node := w.r.recent(w.rng); node != "" && w.held[node] == nil {
					w.claimByID(node)
				}
			}
		}
		time.Sleep(time.Duration(5+w.rng.IntN(15)) * time.Millisecond)
	}
}

func (w *flowWorker) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), flowCall)
}

// granted records a lease handed out (or, renewed, re-claimed) by a call
// sent at call and answered at ret, and holds it.
func (w *flowWorker) granted(l client.Lease, renewed bool, call, ret int64) {
	w.r.rec.Add(flowcheck.Op{Kind: flowcheck.Grant, Node: l.NodeID, Fence: uint64(l.Fence), Keys: w.r.keysOf(l.NodeID), Queue: flowQueue,
		Renewed: renewed, Call: call, Return: ret, Expires: l.Expires * int64(time.Millisecond)})
	if h := w.held[l.NodeID]; h != nil && h.fence == uint64(l.Fence) {
		return // a re-claim of a lease held: a renewal
	}
	w.held[l.NodeID] = &flowHeld{
		fence:   uint64(l.Fence),
		renewAt: time.Now().Add(flowTTL / 2),
		finish:  time.Now().Add(time.Duration(30+w.rng.IntN(970)) * time.Millisecond),
	}
}

// refused counts a refusal; one the contract does not allow is noted.
func (w *flowWorker) refused(what string, status int, hr *http.Response, body []byte) {
	switch status {
	case http.StatusConflict:
		p := client.ProblemFrom(hr, body)
		if p == nil {
			w.r.odd.Store(fmt.Sprintf("%s: 409 without a problem: %s", what, body), true)
			return
		}
		switch code := string(p.Code); code {
		case "concurrency_limited", "start_rate_limited", "budget_exhausted":
			if hr.Header.Get("Retry-After") == "" && code != "concurrency_limited" {
				w.r.odd.Store(fmt.Sprintf("%s: 409 %s without Retry-After", what, code), true)
			}
			w.r.count(what + " 409 " + code)
		case "conflict", "not_claimable", "lease_lost":
			w.r.count(what + " 409 " + code)
		default:
			w.r.odd.Store(fmt.Sprintf("%s: 409 %s: %s", what, code, body), true)
		}
	case http.StatusNoContent:
		reason, _, _ := strings.Cut(hr.Header.Get("Tether-Throttled"), ";")
		if reason == "" {
			reason = "nothing ready"
		}
		w.r.count(what + " 204 " + reason)
	case http.StatusServiceUnavailable:
		w.r.count(what + " 503")
	default:
		w.r.odd.Store(fmt.Sprintf("%s: %d %s", what, status, body), true)
	}
}

func (w *flowWorker) claimByID(node string) {
	ctx, cancel := w.ctx()
	defer cancel()
	w.r.reach(w.sub, func(c *client.ClientWithResponses) {
		call := flowcheck.Now()
		res, err := c.ClaimNodeWithResponse(ctx, node, client.ClaimRequest{TTLMS: ptr(flowTTL.Milliseconds())})
		ret := flowcheck.Now()
		switch {
		case err != nil:
		case res.JSON200 != nil:
			w.r.count("claim 200")
			w.granted(res.JSON200.Lease, res.JSON200.Renewed, call, ret)
		default:
			w.refused("claim", res.StatusCode(), res.HTTPResponse, res.Body)
		}
	})
}

// waitMS is a claim-next's wait: none half the time (a tight interval for
// the rate check), else long enough to wait for a bucket's next token.
func (w *flowWorker) waitMS() *int64 {
	if w.rng.IntN(2) == 0 {
		return ptr(int64(0))
	}
	return ptr(int64(200))
}

func (w *flowWorker) claimNext() {
	ctx, cancel := w.ctx()
	defer cancel()
	w.r.reach(w.sub, func(c *client.ClientWithResponses) {
		call := flowcheck.Now()
		res, err := c.ClaimNextWithResponse(ctx, flowQueue, client.ClaimNextRequest{TTLMS: ptr(flowTTL.Milliseconds()), WaitMS: w.waitMS()})
		ret := flowcheck.Now()
		switch {
		case err != nil:
		case res.JSON200 != nil:
			w.r.count("claim-next 200")
			w.granted(res.JSON200.Lease, res.JSON200.Renewed, call, ret)
		default:
			w.refused("claim-next", res.StatusCode(), res.HTTPResponse, res.Body)
		}
	})
}

func (w *flowWorker) claimMany(n int) {
	ctx, cancel := w.ctx()
	defer cancel()
	w.r.reach(w.sub, func(c *client.ClientWithResponses) {
		call := flowcheck.Now()
		res, err := c.ClaimNextManyWithResponse(ctx, flowQueue, client.ClaimManyRequest{Max: ptr(n), TTLMS: ptr(flowTTL.Milliseconds()), WaitMS: w.waitMS()})
		ret := flowcheck.Now()
		switch {
		case err != nil:
		case res.JSON200 != nil && len(res.JSON200.Items) > 0:
			w.r.count("claims 200")
			for _, it := range res.JSON200.Items {
				w.granted(it.Lease, false, call, ret)
			}
		case res.JSON200 != nil:
			w.r.count("claims 200 empty")
		default:
			w.refused("claims", res.StatusCode(), res.HTTPResponse, res.Body)
		}
	})
}

func (w *flowWorker) renew(node string, h *flowHeld) {
	ctx, cancel := w.ctx()
	defer cancel()
	w.r.reach(w.sub, func(c *client.ClientWithResponses) {
		call := flowcheck.Now()
		res, err := c.RenewLeaseWithResponse(ctx, node, client.RenewRequest{Fence: ptr(int64(h.fence))})
		ret := flowcheck.Now()
		switch {
		case err != nil:
			h.renewAt = time.Now().Add(100 * time.Millisecond)
		case res.JSON200 != nil:
			w.r.rec.Add(flowcheck.Op{Kind: flowcheck.Renew, Node: node, Fence: h.fence, Call: call, Return: ret, Expires: res.JSON200.Lease.Expires * int64(time.Millisecond)})
			h.renewAt = time.Now().Add(flowTTL / 2)
		case res.StatusCode() == http.StatusServiceUnavailable:
			h.renewAt = time.Now().Add(100 * time.Millisecond)
		default:
			w.refused("renew", res.StatusCode(), res.HTTPResponse, res.Body)
			delete(w.held, node)
		}
	})
}

// finish ends a lease: complete (now and then asking for the next node in
// the same call), release, or abandon it to its expiry.
func (w *flowWorker) finish(node string, h *flowHeld) {
	delete(w.held, node)
	ctx, cancel := w.ctx()
	defer cancel()
	fence := ptr(int64(h.fence))
	end := func(call int64) {
		w.r.rec.Add(flowcheck.Op{Kind: flowcheck.End, Node: node, Fence: h.fence, Call: call})
	}
	switch n := w.rng.IntN(20); {
	case n < 2:
		w.r.count("abandoned")
	case n < 8:
		w.r.reach(w.sub, func(c *client.ClientWithResponses) {
			call := flowcheck.Now()
			end(call)
			res, err := c.ReleaseNodeWithResponse(ctx, node, client.ReleaseRequest{Fence: fence})
			if err == nil && res.StatusCode() != http.StatusOK {
				w.refused("release", res.StatusCode(), res.HTTPResponse, res.Body)
			}
		})
	default:
		req := client.CompleteRequest{Fence: fence}
		if n < 12 {
			req.Next = &client.NextClaimRequest{Queue: flowQueue, TTLMS: ptr(flowTTL.Milliseconds())}
		}
		w.r.reach(w.sub, func(c *client.ClientWithResponses) {
			call := flowcheck.Now()
			end(call)
			res, err := c.CompleteNodeWithResponse(ctx, node, req)
			ret := flowcheck.Now()
			switch {
			case err != nil:
			case res.JSON200 != nil:
				w.r.done.Add(1)
				if next := res.JSON200.Next; next != nil {
					w.r.count("complete with next granted")
					w.granted(next.Lease, next.Renewed, call, ret)
				}
			default:
				w.refused("complete", res.StatusCode(), res.HTTPResponse, res.Body)
			}
		})
	}
}

// drive runs workers for d, faulting every `every` with fault (nil: none),
// and checks the history against flowLimits.
func (r *flowRun) drive(workers int, d, every time.Duration, fault func()) flowcheck.Report {
	t := r.t
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.feed(stop)
	}()
	seed := uint64(time.Now().UnixNano())
	t.Logf("%d workers for %v, a fault every %v (seed %d)", workers, d, every, seed)
	for i := range workers {
		sub := fmt.Sprintf("w%02d", i)
		w := &flowWorker{r: r, sub: sub, rng: rand.New(rand.NewPCG(seed, uint64(i))), held: map[string]*flowHeld{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(stop)
		}()
	}
	start := time.Now()
	for k := 1; fault != nil && time.Duration(k)*every < d; k++ {
		time.Sleep(time.Until(start.Add(time.Duration(k) * every)))
		fault()
	}
	time.Sleep(time.Until(start.Add(d)))
	close(stop)
	wg.Wait()

	r.odd.Range(func(k, _ any) bool {
		t.Errorf("an answer the contract does not allow: %v", k)
		return true
	})
	r.mu.Lock()
	t.Logf("answers: %v; %d nodes created, %d completed", r.seen, r.ready.Load(), r.done.Load())
	r.mu.Unlock()
	ops := r.rec.Ops()
	rep := flowcheck.Check(flowcheck.Config{Limits: flowLimits, ClockSlack: flowcheck.DefaultClockSlack}, ops)
	t.Logf("%d calls recorded; %v", len(ops), rep)
	return rep
}

// requireHeld fails the test when rep found a violation, or when the load
// did not press on the limits (a run that never met them proves nothing).
func (r *flowRun) requireHeld(rep flowcheck.Report) {
	t := r.t
	t.Helper()
	if !rep.OK() {
		if f, err := os.CreateTemp("", "tether-flowcheck-*.json"); err == nil {
			_ = json.NewEncoder(f).Encode(r.rec.Ops())
			f.Close()
			t.Logf("the history is kept in %s", f.Name())
		}
		t.Fatalf("flow control broke its promises:\n%v", rep)
	}
	if rep.AtLimit == 0 {
		t.Errorf("no key was ever surely at its limit: the load tests too little")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	limited, throttled := 0, 0
	for answer, n := range r.seen {
		if strings.HasSuffix(answer, "concurrency_limited") {
			limited += n
		}
		if strings.HasSuffix(answer, "start_rate_limited") {
			throttled += n
		}
	}
	if limited == 0 || throttled == 0 {
		t.Errorf("refusals: %d concurrency_limited, %d start_rate_limited; the load must meet both", limited, throttled)
	}
}
