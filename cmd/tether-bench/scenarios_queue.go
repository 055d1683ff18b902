package main

import (
	"bytes"
	"net/http"
	"strconv"
	"time"
)

// Queue scenarios: (a) claim-next + complete, (h) GET /health beside it,
// (i) (a) with the next claim folded into the complete, (b) claims + batch
// complete. (g) is in scenarios_scale.go.

var claimNextBody = []byte(`{"wait_ms":0}`)

// claimComplete loops claim-next on queue then complete, until the time is
// up or the queue is empty. An op is a completed pair that began in the window.
func claimComplete(queue string) func(w *worker) {
	claimPath := "/v1/queues/" + queue + "/claim"
	return func(w *worker) {
		for !w.over() {
			st, resp, measured := w.call("claim_next", "POST", claimPath, claimNextBody)
			if st == http.StatusNoContent {
				w.dryAt = time.Now()
				return
			}
			if st != http.StatusOK {
				continue
			}
			c, ok := parseClaim(resp)
			if !ok {
				w.rec.fail("claim_next: unparsable answer")
				continue
			}
			w.scratch = fenceBody(w.scratch, c.fence)
			if st, _, _ := w.call("complete", "POST", "/v1/nodes/"+c.id+"/complete", w.scratch); st == http.StatusOK && measured {
				w.ops++
			}
		}
	}
}

// claimCompleteNext is claimComplete with the next claim folded into the
// complete ({"next": {"queue": ...}}): one claim-next to start, then one
// request per job. An op is a completed pair that began in the window.
func claimCompleteNext(queue string) func(w *worker) {
	claimPath := "/v1/queues/" + queue + "/claim"
	return func(w *worker) {
		var c claimed
		have := false
		for !w.over() {
			if !have {
				st, resp, _ := w.call("claim_next", "POST", claimPath, claimNextBody)
				if st == http.StatusNoContent {
					w.dryAt = time.Now()
					return
				}
				if st != http.StatusOK {
					continue
				}
				if c, have = parseClaim(resp); !have {
					w.rec.fail("claim_next: unparsable answer")
					continue
				}
			}
			w.scratch = completeNextBody(w.scratch, c.fence, queue)
			st, resp, measured := w.call("complete_next", "POST", "/v1/nodes/"+c.id+"/complete", w.scratch)
			have = false
			if st != http.StatusOK {
				continue
			}
			if measured {
				w.ops++
			}
			i := bytes.Index(resp, nextKey)
			if i < 0 {
				w.rec.fail("complete_next: no next in the answer")
				continue
			}
			if bytes.HasPrefix(resp[i+len(nextKey):], []byte("null")) {
				w.dryAt = time.Now()
				return
			}
			if c, have = parseClaim(resp[i+len(nextKey):]); !have {
				w.rec.fail("complete_next: unparsable next claim")
			}
		}
	}
}

var nextKey = []byte(`"next":`)

// completeNextBody is {"fence": fence, "next": {"queue": queue}}.
func completeNextBody(dst []byte, fence int64, queue string) []byte {
	dst = append(dst[:0], `{"fence":`...)
	dst = strconv.AppendInt(dst, fence, 10)
	dst = append(dst, `,"next":{"queue":"`...)
	dst = append(dst, queue...)
	return append(dst, `"}}`...)
}

// measuredSpan is the window, cut short when the queue ran dry in it.
func measuredSpan(ws []*worker, win window, r *result) time.Duration {
	d := win.end.Sub(win.start)
	if dry := firstDry(ws); !dry.IsZero() {
		if dry.Before(win.start) {
			r.note("QUEUE RAN DRY during warm-up: raise -preload")
			return 0
		}
		d = dry.Sub(win.start)
		r.note("QUEUE RAN DRY %.2fs into the window: rate is over that span; raise -preload", d.Seconds())
	}
	return d
}

func preloadNote(r *result, n int, took time.Duration) {
	r.note("preloaded %d nodes in %.2fs (%.0f nodes/s)", n, took.Seconds(), float64(n)/took.Seconds())
}

// cpuNote says how busy the server and the rest of the machine were in the
// window: the harness shares its cores, and so may other processes (noise).
// The server's CPU per op is steadier than ops/s on a noisy machine.
func cpuNote(r *result, u usage) {
	r.note("CPU in the window: server %.2fs, harness %.2fs, other processes %.2fs (the machine's cores are shared)", u.server, u.client, u.other)
}

// scenarioA runs (a) and, when withHealth, (h) on the same server.
func (b *bench) scenarioA(withHealth bool) ([]*result, error) {
	s, err := b.open("a")
	if err != nil {
		return nil, err
	}
	out, err := b.runA(s, withHealth)
	if err != nil {
		s.abort()
		return out, err
	}
	return out, s.close()
}

func (b *bench) runA(s *stage, withHealth bool) ([]*result, error) {
	r, err := b.drainQueue(s, "a", claimComplete("q"))
	if err != nil {
		return nil, err
	}
	out := []*result{r}
	if withHealth {
		s.began = time.Now()
		s.fresh = false
		h := b.runHealth(s)
		h.note("same server as (a), after it")
		out = append(out, h)
	}
	return out, nil
}

// scenarioI runs (i): (a) with each complete asking for the next claim.
func (b *bench) scenarioI() ([]*result, error) {
	s, err := b.open("i")
	if err != nil {
		return nil, err
	}
	r, err := b.drainQueue(s, "i", claimCompleteNext("q"))
	if err != nil {
		s.abort()
		return nil, err
	}
	return []*result{r}, s.close()
}

// drainQueue preloads queue q with -preload nodes and drives the workers
// through loop on it: the measurement of (a) and (i), reported as name.
func (b *bench) drainQueue(s *stage, name string, loop func(w *worker)) (*result, error) {
	n := b.cfg.preload
	took, err := s.createNodes(n, queuedItem(name+"-", "q"))
	if err != nil {
		return nil, err
	}
	ws := s.workers()
	dr := s.drive(ws, b.cfg.warmup, b.cfg.duration, loop)
	ops, rec := totals(ws)
	r := s.result(name, dr.cpu.server)
	r.fill(ops, measuredSpan(ws, dr.win, r), rec)
	preloadNote(r, n, took)
	cpuNote(r, dr.cpu)
	storeNote(r, dr.store, ops)
	return r, nil
}

// scenarioH runs (h) alone on an empty server.
func (b *bench) scenarioH() ([]*result, error) {
	s, err := b.open("h")
	if err != nil {
		return nil, err
	}
	return []*result{b.runHealth(s)}, s.close()
}

func (b *bench) runHealth(s *stage) *result {
	ws := s.workers()
	dr := s.drive(ws, b.cfg.warmup, b.cfg.duration, func(w *worker) {
		for !w.over() {
			if st, _, measured := w.call("health", "GET", "/health", nil); st == http.StatusOK && measured {
				w.ops++
			}
		}
	})
	ops, rec := totals(ws)
	r := s.result("h", dr.cpu.server)
	r.fill(ops, b.cfg.duration, rec)
	cpuNote(r, dr.cpu)
	storeNote(r, dr.store, ops)
	return r
}

// batchMax is how many jobs one claims request asks for in (b).
const batchMax = 100

// scenarioB: claims {max: 100}, then one POST /v1/batch completing them all.
func (b *bench) scenarioB() ([]*result, error) {
	s, err := b.open("b")
	if err != nil {
		return nil, err
	}
	n := b.cfg.preloadBatched
	took, err := s.createNodes(n, queuedItem("b-", "q"))
	if err != nil {
		s.abort()
		return nil, err
	}
	ws := s.workers()
	claimsBody := []byte(`{"max":` + strconv.Itoa(batchMax) + `,"wait_ms":0}`)
	dr := s.drive(ws, b.cfg.warmup, b.cfg.duration, func(w *worker) {
		got := make([]claimed, 0, batchMax)
		body := make([]byte, 0, 64*batchMax)
		for !w.over() {
			st, resp, measured := w.call("claims_100", "POST", "/v1/queues/q/claims", claimsBody)
			if st != http.StatusOK {
				continue
			}
			var ok bool
			if got, ok = parseClaims(resp, got); !ok {
				w.rec.fail("claims_100: unparsable answer")
				continue
			}
			if len(got) == 0 {
				w.dryAt = time.Now()
				return
			}
			body = append(body[:0], `{"ops":[`...)
			for i, c := range got {
				if i > 0 {
					body = append(body, ',')
				}
				body = append(body, `{"op":"complete","id":"`...)
				body = append(body, c.id...)
				body = append(body, `","fence":`...)
				body = strconv.AppendInt(body, c.fence, 10)
				body = append(body, '}')
			}
			body = append(body, "]}"...)
			st, resp, _ = w.call("batch_complete_100", "POST", "/v1/batch", body)
			if st != http.StatusOK {
				continue
			}
			done := count200(resp)
			for range len(got) - done {
				w.rec.fail("batch op complete: not 200")
			}
			if measured {
				w.ops += int64(done)
			}
		}
	})
	ops, rec := totals(ws)
	r := s.result("b", dr.cpu.server)
	r.fill(ops, measuredSpan(ws, dr.win, r), rec)
	preloadNote(r, n, took)
	r.note("ops are jobs completed; %d jobs per claims request and per batch", batchMax)
	cpuNote(r, dr.cpu)
	storeNote(r, dr.store, ops)
	return []*result{r}, s.close()
}
