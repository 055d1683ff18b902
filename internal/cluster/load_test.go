package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// balancer stands for the load balancer in front of a test cluster: it
// sends each request to the next, in turn, of the servers in rotation, as a
// load balancer with a readiness probe does: a server comes in when /ready
// answers 200 and goes out after failThreshold probes in a row (every
// probeEvery) that did not. When no server is in rotation (probes can time
// out on a loaded machine) it fails open, as load balancers do, and sends
// to every server. A server can also be taken out by hand (before it is
// killed); that one gets nothing.
type balancer struct {
	hc *http.Client

	mu       sync.Mutex
	idle     *sync.Cond // signalled when a request ends
	urls     []string
	ready    map[string]bool
	failed   map[string]int  // probes failed in a row
	out      map[string]bool // taken out by hand
	inflight map[string]int
	next     int
}

const (
	probeEvery    = 50 * time.Millisecond
	failThreshold = 3
)

func newBalancer(t *testing.T) *balancer {
	b := &balancer{
		hc:    &http.Client{Timeout: 2 * time.Second},
		ready: map[string]bool{}, failed: map[string]int{}, out: map[string]bool{}, inflight: map[string]int{},
	}
	b.idle = sync.NewCond(&b.mu)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.probe(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

// add registers url: the balancer probes it and sends to it once ready.
func (b *balancer) add(url string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Contains(b.urls, url) {
		b.urls = append(b.urls, url)
	}
	b.ready[url], b.failed[url], b.out[url] = false, 0, false
}

// remove deregisters url (a server that has stopped).
func (b *balancer) remove(url string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.urls = slices.DeleteFunc(b.urls, func(u string) bool { return u == url })
}

// takeOut stops sending to url and waits until no request to it is in
// flight.
func (b *balancer) takeOut(url string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.out[url] = true
	for b.inflight[url] > 0 {
		b.idle.Wait()
	}
}

func (b *balancer) probe(ctx context.Context) {
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		b.mu.Lock()
		urls := slices.Clone(b.urls)
		b.mu.Unlock()
		for _, u := range urls {
			ok := false
			if resp, err := b.hc.Get(u + "/ready"); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ok = resp.StatusCode == http.StatusOK
			}
			b.mu.Lock()
			if !slices.Contains(b.urls, u) {
				b.mu.Unlock()
				continue
			}
			if ok {
				b.failed[u] = 0
			} else {
				b.failed[u]++
			}
			b.ready[u] = ok || b.ready[u] && b.failed[u] < failThreshold
			b.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// pick is the server for the next request ("" when every one was taken
// out by hand) and the function to call when the request ends.
func (b *balancer) pick() (string, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	open := true // no server in rotation: fail open
	for _, u := range b.urls {
		if b.ready[u] && !b.out[u] {
			open = false
		}
	}
	for range b.urls {
		u := b.urls[b.next%len(b.urls)]
		b.next++
		if (b.ready[u] || open) && !b.out[u] {
			b.inflight[u]++
			return u, func() {
				b.mu.Lock()
				defer b.mu.Unlock()
				b.inflight[u]--
				b.idle.Broadcast()
			}
		}
	}
	return "", func() {}
}

// clientError is an answer a client of the load did not expect.
type clientError struct {
	phase, op, server string
	status            int // 0: no answer
	retryAfter        string
	detail            string
	sent, answered    time.Time
}

func (e clientError) String() string {
	return fmt.Sprintf("%s: %s via %s: %d (Retry-After %q) %s", e.phase, e.op, e.server, e.status, e.retryAfter, e.detail)
}

// load drives work through the balancer from clients that never retry:
// each worker, on a tenant of its own, creates a node, claims the next one
// of its queue, renews the lease and completes the node, over and over.
// Every answer is counted against the phase the test is in when the
// request is sent.
type load struct {
	lb     *balancer
	hc     *http.Client
	phase  atomic.Pointer[string]
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	progress *sync.Cond // signalled when a worker finishes a cycle
	cycles   int
	requests map[string]int
	errs     []clientError
}

// loadPace is the least time a worker takes for one cycle of four requests.
const loadPace = 100 * time.Millisecond

// startLoad starts a worker per tenant, in phase.
func startLoad(t *testing.T, lb *balancer, tenants []string, phase string) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{
		lb: lb, cancel: cancel, requests: map[string]int{},
		hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}},
	}
	l.progress = sync.NewCond(&l.mu)
	l.setPhase(phase)
	for i, ten := range tenants {
		tok := token(t, ten)
		l.wg.Go(func() { l.work(ctx, tok, "q"+strconv.Itoa(i)) })
	}
	t.Cleanup(l.stop)
	return l
}

func (l *load) setPhase(p string) { l.phase.Store(&p) }

func (l *load) stop() {
	l.cancel()
	l.wg.Wait()
}

// waitCycles waits until the workers have finished n more cycles.
func (l *load) waitCycles(t *testing.T, n int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	want := l.cycles + n
	deadline := time.Now().Add(2 * time.Minute)
	wake := time.AfterFunc(2*time.Minute, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.progress.Broadcast()
	})
	defer wake.Stop()
	for l.cycles < want {
		if time.Now().After(deadline) {
			t.Fatalf("the load finished %d of %d cycles in 2 minutes", n-(want-l.cycles), n)
		}
		l.progress.Wait()
	}
}

// errors are the unexpected answers of phase.
func (l *load) errors(phase string) []clientError {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []clientError
	for _, e := range l.errs {
		if e.phase == phase {
			out = append(out, e)
		}
	}
	return out
}

func (l *load) count(phase string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests[phase]
}

func (l *load) work(ctx context.Context, tok, queue string) {
	pace := time.NewTicker(loadPace)
	defer pace.Stop()
	for ctx.Err() == nil {
		if l.cycle(ctx, tok, queue) {
			l.mu.Lock()
			l.cycles++
			l.progress.Broadcast()
			l.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-pace.C:
		}
	}
}

// cycle makes one job go through; false when an answer was not the one
// expected (the next cycle starts over).
func (l *load) cycle(ctx context.Context, tok, queue string) bool {
	if _, ok := l.do(ctx, tok, "create", "/v1/nodes", map[string]any{"type": "task", "queue": queue}, http.StatusCreated); !ok {
		return false
	}
	body, ok := l.do(ctx, tok, "claim", "/v1/queues/"+queue+"/claim", map[string]any{"ttl_ms": 60000}, http.StatusOK)
	if !ok {
		return false
	}
	var claim struct {
		Lease struct {
			Fence int64 `json:"fence"`
		} `json:"lease"`
		Node struct {
			ID string `json:"id"`
		} `json:"node"`
	}
	if err := json.Unmarshal(body, &claim); err != nil || claim.Node.ID == "" {
		l.fail(clientError{op: "claim", status: http.StatusOK, detail: "a claim without a node: " + string(body)})
		return false
	}
	fence := map[string]any{"fence": claim.Lease.Fence}
	if _, ok := l.do(ctx, tok, "renew", "/v1/nodes/"+claim.Node.ID+"/renew", fence, http.StatusOK); !ok {
		return false
	}
	_, ok = l.do(ctx, tok, "complete", "/v1/nodes/"+claim.Node.ID+"/complete", fence, http.StatusOK)
	return ok
}

// do POSTs body to path on the balancer's next server, once: the request
// cannot be sent again, not even by the transport.
func (l *load) do(ctx context.Context, tok, op, path string, body any, want int) ([]byte, bool) {
	phase := *l.phase.Load()
	server, done := l.lb.pick()
	defer done()
	e := clientError{phase: phase, op: op, server: server, sent: time.Now()}
	l.mu.Lock()
	l.requests[phase]++
	l.mu.Unlock()
	if server == "" {
		e.detail = "no server in rotation"
		l.fail(e)
		return nil, false
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, server+path, bytes.NewReader(b))
	req.GetBody = nil
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.hc.Do(req)
	e.answered = time.Now()
	if err != nil {
		if ctx.Err() != nil {
			return nil, false // the load is stopping
		}
		e.detail = err.Error()
		l.fail(e)
		return nil, false
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != want {
		e.status, e.retryAfter, e.detail = resp.StatusCode, resp.Header.Get("Retry-After"), string(out)
		if err != nil {
			e.detail = err.Error()
		}
		l.fail(e)
		return nil, false
	}
	return out, true
}

func (l *load) fail(e clientError) {
	if e.phase == "" {
		e.phase = *l.phase.Load()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, e)
}
