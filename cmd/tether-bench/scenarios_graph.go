package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Graph and reaper scenarios: (e) fan-out to children and back to the
// parent, (f) mass expiry.

// scenarioE: a parent with fanoutChildren children; the clients claim-next
// and complete the children, then one claims and completes the parent once
// it is ready. Repeated until -d has passed (at least once), after one
// unmeasured round when there is a warm-up.
func (b *bench) scenarioE() ([]*result, error) {
	s, err := b.open("e")
	if err != nil {
		return nil, err
	}
	ws := s.workers()
	own := newRecorder()
	children := b.cfg.fanoutChildren
	var childSpan time.Duration
	var cpu usage
	rounds, short := 0, 0
	began := time.Now()
	for round := 0; ; round++ {
		warm := round == 0 && b.cfg.warmup > 0
		if !warm && rounds > 0 && time.Since(began) >= b.cfg.duration {
			break
		}
		parent := fmt.Sprintf("e%d-parent", round)
		if _, err := s.disp.must("POST", "/v1/nodes", []byte(`{"id":"`+parent+`","type":"task","queue":"fan-parent"}`), http.StatusCreated); err != nil {
			s.abort()
			return nil, err
		}
		prefix := fmt.Sprintf("e%d-c", round)
		created, err := s.createNodes(children, func(dst []byte, i int) []byte {
			dst = append(dst, `{"id":"`...)
			dst = append(dst, prefix...)
			dst = strconv.AppendInt(dst, int64(i), 10)
			return append(dst, `","type":"task","queue":"fan","parent":"`+parent+`"}`...)
		})
		if err != nil {
			s.abort()
			return nil, err
		}
		opsBefore, _ := totals(ws)
		meter := startCPU(s.srv)
		t0 := time.Now()
		s.drive(ws, 0, time.Hour, claimComplete("fan"))
		t1 := time.Now()
		// Every child is complete: the parent should be ready now.
		w := ws[0]
		resp, err := w.c.must("POST", "/v1/queues/fan-parent/claim", []byte(`{"wait_ms":10000}`), http.StatusOK)
		t2 := time.Now()
		if err != nil {
			s.abort()
			return nil, fmt.Errorf("the parent of round %d did not become claimable: %w", round, err)
		}
		c, ok := parseClaim(resp)
		if !ok || c.id != parent {
			s.abort()
			return nil, fmt.Errorf("claimed %q from fan-parent, want %q", c.id, parent)
		}
		if _, err := w.c.must("POST", "/v1/nodes/"+parent+"/complete", fenceBody(nil, c.fence), http.StatusOK); err != nil {
			s.abort()
			return nil, err
		}
		t3 := time.Now()
		if warm {
			for _, w := range ws {
				w.ops, w.rec = 0, newRecorder()
			}
			continue
		}
		opsAfter, _ := totals(ws)
		if done := opsAfter - opsBefore; done != int64(children) {
			short++
		}
		cpu = cpu.add(meter.read())
		childSpan += t1.Sub(t0)
		own.add("parent_ready_claim", t2.Sub(t1))
		own.add("create_children_batch", created)
		own.add("round_total", t3.Sub(t0))
		rounds++
	}
	ops, rec := totals(ws)
	rec = merge(rec, own)
	r := s.result("e", cpu.server)
	r.fill(ops, childSpan, rec)
	cpuNote(r, cpu)
	r.note("%d rounds of 1 parent + %d children; ops are children completed, rate over the children's phase", rounds, children)
	r.note("create_children_batch: the one batch create of the children (not in round_total); round_total: children created → every child complete → parent claimed and complete; parent_ready_claim: last child done → parent claimed (long poll)")
	if short > 0 {
		r.note("%d rounds completed fewer than %d children", short, children)
	}
	return []*result{r}, s.close()
}

// scenarioF: many leases of 1 s expire together; the tenant's event log shows
// when the reaper requeued each (its expired event's `at`) and when the
// harness saw it.
func (b *bench) scenarioF() ([]*result, error) {
	s, err := b.open("f")
	if err != nil {
		return nil, err
	}
	out, err := b.runF(s)
	if err != nil {
		s.abort()
		return nil, err
	}
	return out, s.close()
}

// fWait is how long (f) waits after the last lease's expiry for the
// expired events.
const fWait = 60 * time.Second

type eventItem struct {
	Seq    uint64 `json:"seq"`
	At     string `json:"at"`
	Type   string `json:"type"`
	NodeID string `json:"node_id"`
	Data   struct {
		Fence int64 `json:"fence"`
	} `json:"data"`
}

type eventPage struct {
	Items []eventItem `json:"items"`
}

// heldLease is one lease the claims handed out: when it expires and when
// its claims answer arrived (Unix ms).
type heldLease struct{ expires, answered int64 }

// expiry is one expired event as the harness saw it.
type expiry struct {
	key      string // node id/fence
	at       int64  // the event's `at`, Unix ms
	observed int64  // when its page arrived, Unix ms
}

func (b *bench) runF(s *stage) ([]*result, error) {
	n := b.cfg.reaperLeases
	if _, err := s.createNodes(n, queuedItem("f-", "r")); err != nil {
		return nil, err
	}
	// Find the head of the log, so the poller starts there.
	var after uint64
	for {
		resp, err := s.disp.must("GET", "/v1/events?limit=1000&after="+strconv.FormatUint(after, 10), nil, http.StatusOK)
		if err != nil {
			return nil, err
		}
		var page eventPage
		if err := json.Unmarshal(resp, &page); err != nil {
			return nil, fmt.Errorf("error decoding events: %w", err)
		}
		if len(page.Items) == 0 {
			break
		}
		after = page.Items[len(page.Items)-1].Seq
	}
	// The poller follows the log from there with long polls.
	poller := newCaller(s.srv.url, b.dispTokens[0], s.cl)
	var mu sync.Mutex
	var seen []expiry
	stop := make(chan struct{})
	pollErr := make(chan error, 1)
	go func() {
		defer close(pollErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			resp, err := poller.must("GET", "/v1/events?limit=1000&wait_ms=500&after="+strconv.FormatUint(after, 10), nil, http.StatusOK)
			obs := time.Now().UnixMilli()
			if err != nil {
				pollErr <- err
				return
			}
			var page eventPage
			if err := json.Unmarshal(resp, &page); err != nil {
				pollErr <- fmt.Errorf("error decoding events: %w", err)
				return
			}
			mu.Lock()
			for _, ev := range page.Items {
				after = ev.Seq
				if ev.Type != "expired" {
					continue
				}
				at, err := time.Parse(time.RFC3339Nano, ev.At)
				if err != nil {
					mu.Unlock()
					pollErr <- fmt.Errorf("bad event time %q: %w", ev.At, err)
					return
				}
				seen = append(seen, expiry{key: ev.NodeID + "/" + strconv.FormatInt(ev.Data.Fence, 10), at: at.UnixMilli(), observed: obs})
			}
			mu.Unlock()
		}
	}()
	defer func() {
		close(stop)
		<-pollErr
	}()

	// Claim them all at once, 1000 a request, on several identities.
	ws := s.workers()
	meter := startCPU(s.srv)
	s.srv.mon.reset()
	claimStart := time.Now()
	leases := map[string]heldLease{} // by node id/fence
	var lmu sync.Mutex
	claimRec := newRecorder()
	var firstErr error
	claim := func(w *worker) {
		t0 := time.Now()
		resp, err := w.c.must("POST", "/v1/queues/r/claims", []byte(`{"max":1000,"ttl_ms":1000,"wait_ms":0}`), http.StatusOK)
		took := time.Since(t0)
		answered := time.Now().UnixMilli()
		var got []claimed
		if err == nil {
			var ok bool
			if got, ok = parseClaims(resp, nil); !ok {
				err = fmt.Errorf("unparsable claims answer: %.200s", resp)
			}
		}
		lmu.Lock()
		defer lmu.Unlock()
		claimRec.add("claims_1000_ttl_1s", took)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		for _, c := range got {
			leases[c.id+"/"+strconv.FormatInt(c.fence, 10)] = heldLease{expires: c.expires, answered: answered}
		}
	}
	reqs := (n + 999) / 1000
	onWorkers(len(ws), reqs, func(w, _ int) { claim(ws[w]) })
	claimTook := time.Since(claimStart)
	if firstErr != nil {
		return nil, firstErr
	}
	var lastExpires, firstExpires, lastAnswer int64
	deadOnArrival := 0
	for _, l := range leases {
		lastExpires = max(lastExpires, l.expires)
		lastAnswer = max(lastAnswer, l.answered)
		if firstExpires == 0 || l.expires < firstExpires {
			firstExpires = l.expires
		}
		if l.expires <= l.answered {
			deadOnArrival++
		}
	}

	// Watch the queue drain of running leases, and the poller collect the
	// expiries, until every lease has expired or the deadline passes.
	deadline := time.UnixMilli(lastExpires).Add(fWait)
	var runningZero time.Time
	for time.Now().Before(deadline) {
		mu.Lock()
		got := len(seen)
		mu.Unlock()
		if runningZero.IsZero() {
			if running, err := queueRunning(s.disp, "r"); err == nil && running == 0 {
				runningZero = time.Now()
			}
		}
		if got >= len(leases) && !runningZero.IsZero() {
			break
		}
		select {
		case err := <-pollErr:
			if err != nil {
				return nil, err
			}
		case <-time.After(100 * time.Millisecond):
		}
	}
	cpu := meter.read()

	mu.Lock()
	defer mu.Unlock()
	var lagAt, lagObs, lagVisible []int64
	var lastAt int64
	stray, afterAnswers := 0, 0
	for _, e := range seen {
		l, ok := leases[e.key]
		if !ok {
			stray++
			continue
		}
		lagAt = append(lagAt, e.at-l.expires)
		lagObs = append(lagObs, e.observed-l.expires)
		lagVisible = append(lagVisible, e.at-max(l.expires, l.answered))
		lastAt = max(lastAt, e.at)
		if e.at >= lastAnswer {
			afterAnswers++
		}
	}
	r := s.result("f", cpu.server)
	cpuNote(r, cpu)
	r.Clients = 1
	r.fill(int64(len(lagAt)), time.Duration(lastAt-firstExpires)*time.Millisecond, claimRec)
	r.Latency["expiry_to_event_at"] = lagSummary(lagAt)
	r.Latency["expiry_to_observed"] = lagSummary(lagObs)
	r.Latency["answered_or_expiry_to_event_at"] = lagSummary(lagVisible)
	r.note("%d leases of 1000 ms claimed in %d claims requests (max 1000) in %.2fs; expires spread over %d ms", len(leases), reqs, claimTook.Seconds(), lastExpires-firstExpires)
	r.note("ops are expiries seen as expired events; rate from the first lease's expiry to the last event")
	r.note("lag = expired event's at (or when the harness saw it) − the lease's expires; answered_or_expiry_to_event_at starts from the later of expires and the claims answer (a lease cannot be reaped before its claim commits)")
	if deadOnArrival > 0 {
		r.note("%d of %d leases had already expired when their claims answer arrived", deadOnArrival, len(leases))
	}
	if span := lastAt - lastAnswer; afterAnswers > 0 && span > 0 {
		r.note("after the last claims answer the reaper settled %d expiries in %d ms (%.0f/s)", afterAnswers, span, float64(afterAnswers)*1000/float64(span))
	}
	r.note("lag is measured in whole ms (event at is ms precision), server and harness share the clock")
	if missing := len(leases) - len(lagAt); missing > 0 {
		r.Errors["expired event missing"] = missing
		r.note("%d leases had no expired event within %v of the last expiry", missing, fWait)
	}
	if stray > 0 {
		r.note("%d expired events for leases the harness did not see claimed", stray)
	}
	if runningZero.IsZero() {
		r.note("GET /v1/queues still showed running leases at the deadline")
	} else {
		r.note("GET /v1/queues showed 0 running %d ms after the last lease's expiry (polled every 100 ms)", runningZero.UnixMilli()-lastExpires)
	}
	return []*result{r}, nil
}

// queueRunning is the running count of queue from GET /v1/queues.
func queueRunning(c *caller, queue string) (int64, error) {
	resp, err := c.must("GET", "/v1/queues", nil, http.StatusOK)
	if err != nil {
		return 0, err
	}
	var v struct {
		Items []struct {
			Queue  string           `json:"queue"`
			Counts map[string]int64 `json:"counts"`
		} `json:"items"`
	}
	if err := json.Unmarshal(resp, &v); err != nil {
		return 0, err
	}
	for _, q := range v.Items {
		if q.Queue == queue {
			return q.Counts["running"], nil
		}
	}
	return 0, fmt.Errorf("queue %q not listed", queue)
}

// onWorkers runs reqs requests at once over workers, fn(w, k) making request
// k on worker w, and returns when all are done. A worker's connection
// carries one request at a time, so a worker given more than one (more
// requests than workers) makes them in turn.
func onWorkers(workers, reqs int, fn func(w, k int)) {
	var wg sync.WaitGroup
	for w := range min(reqs, workers) {
		wg.Go(func() {
			for k := w; k < reqs; k += workers {
				fn(w, k)
			}
		})
	}
	wg.Wait()
}
