package kv

// The writer: one goroutine applies every write, a segment at a time, each
// closure writing into the segment's overlay, and hands each segment to the
// logger without waiting for it; the logger makes it durable (logger.go) and
// the applier applies it (engine.go).

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/tether-run/tether/internal/fault"
)

// inflight is a segment handed to the logger: its writes, and the requests
// and hooks that wait for them to be durable.
type inflight struct {
	over      *overlay
	seq       uint64     // its log record (0: none)
	waiting   []*request // answered once durable
	onDurable []func()
	done      atomic.Bool // set once the engine's committed state holds it
	logged    atomic.Bool // set once durable and visible to View
	// shown are the writes shown to readers before the segment is durable
	// (shown.go); nil for none.
	shown *shownWrites
}

// segment is the writer's current unit of work: the writes applied so far.
// Reads fall through to the segments handed on but not yet applied
// (Store.pend), then to the engine's committed state.
type segment struct {
	s    *Store
	over *overlay
	snap reader // opened on the first read that needs the engine
}

// lookup finds key in the segment or in the segments still in flight,
// newest first.
func (g *segment) lookup(key string) (value, bool) {
	if v, ok := g.over.vals[key]; ok {
		return v, true
	}
	p := g.s.pend
	for i := len(p) - 1; i >= 0; i-- {
		if v, ok := p[i].over.vals[key]; ok {
			return v, true
		}
	}
	return value{}, false
}

func (g *segment) under(prefix string) []string {
	out := g.over.under(prefix)
	for _, f := range g.s.pend {
		out = append(out, f.over.under(prefix)...)
	}
	return out
}

// snapshot opens the segment's reader of committed state. A Badger snapshot
// waits for every commit already handed over, so it holds everything not in
// flight (and, harmlessly, some of what is); etcd's reads are linearizable.
func (g *segment) snapshot() (reader, error) {
	if g.snap == nil {
		g.s.stats.Snapshots.Add(1)
		g.snap = g.s.eng.reader()
	}
	return g.snap, nil
}

// txnScratch is the writer's reusable storage for a write transaction's
// lists: each transaction starts with them empty and hands them back once
// it is done (the hooks have been copied or run by then).
type txnScratch struct {
	undo      []undoEntry
	onApply   []func()
	onDurable []func()
}

// keep takes t's lists back, emptied, for the next transaction.
func (sc *txnScratch) keep(t *Txn) {
	clear(t.undo)
	clear(t.onApply)
	clear(t.onDurable)
	sc.undo, sc.onApply, sc.onDurable = t.undo[:0], t.onApply[:0], t.onDurable[:0]
	t.undo, t.onApply, t.onDurable = nil, nil, nil
}

func (s *Store) writeLoop() {
	defer close(s.closed)
	defer close(s.commq)
	batch := make([]*request, 0, s.maxBatch)
	for {
		var first *request
		select {
		case first = <-s.urgent:
		default:
			select {
			case first = <-s.urgent:
			case first = <-s.reqs:
			case <-s.done:
				s.drain()
				return
			}
		}
		batch = append(batch[:0], first)
	gather:
		for len(batch) < s.maxBatch {
			select {
			case r := <-s.urgent:
				batch = append(batch, r)
			default:
				select {
				case r := <-s.reqs:
					batch = append(batch, r)
				default:
					break gather
				}
			}
		}
		for len(batch) > 0 {
			batch = s.runSegment(batch)
		}
	}
}

// drain runs what was queued before Close.
func (s *Store) drain() {
	for {
		select {
		case r := <-s.urgent:
			s.runSegment([]*request{r})
		case r := <-s.reqs:
			s.runSegment([]*request{r})
		default:
			return
		}
	}
}

// maxSegment bounds how long a segment applies closures before it is handed
// to the logger: a request never waits for its commit behind more than
// this plus one closure's own time (a batch create of 1000 nodes, say).
const maxSegment = 10 * time.Millisecond

// runSegment applies closures of the batch (taking urgent requests first)
// until they are done, maxSegment has passed or the segment is as large as
// one commit of the engine takes, hands the segment to the logger and
// returns the requests left.
func (s *Store) runSegment(batch []*request) []*request {
	s.dropDurable()
	g := &segment{s: s, over: newOverlay()}
	f := &inflight{over: g.over}
	start := time.Now()
	maxCount, maxSize := s.maxKeys, s.maxBytes
	full := false
	run := func(r *request) {
		if err := r.ctx.Err(); err != nil {
			r.err <- err
			r.settle(nil)
			return
		}
		s.txnSeq++
		t := &Txn{w: g, id: s.txnSeq, undo: s.scratch.undo, onApply: s.scratch.onApply, onDurable: s.scratch.onDurable}
		defer s.scratch.keep(t)
		err := s.call(r.fn, t)
		if err == nil && (int64(len(t.undo)) > maxCount || t.size > maxSize) {
			err = fault.Invalidf("", "the change is too large for one transaction")
		}
		if err != nil {
			t.rollback()
			s.answerFailed(f, g, r, err)
			return
		}
		s.stats.Closures.Add(1)
		for _, h := range t.onApply {
			h()
		}
		f.onDurable = append(f.onDurable, t.onDurable...)
		if r.show {
			if g.showable(f, t) {
				s.show(f, t)
			} else if r.durable == nil {
				// An earlier write it read is not durable yet: answered, and
				// shown, once durable, with its segment.
				f.waiting = append(f.waiting, r)
				full = int64(g.over.len()) > maxCount/2 || g.over.size > maxSize/2
				return
			}
		}
		if r.eager {
			r.err <- nil
			if r.durable != nil {
				f.waiting = append(f.waiting, &request{err: r.durable})
			}
		} else {
			f.waiting = append(f.waiting, r)
		}
		full = int64(g.over.len()) > maxCount/2 || g.over.size > maxSize/2
	}
	rest := batch
	for len(rest) > 0 {
	urgent:
		for {
			select {
			case u := <-s.urgent:
				run(u)
			default:
				break urgent
			}
		}
		run(rest[0])
		rest = rest[1:]
		if full || time.Since(start) > maxSegment {
			break
		}
	}
	if g.snap != nil {
		g.snap.discard()
	}
	if len(f.waiting) == 0 && len(f.onDurable) == 0 && g.over.len() == 0 && f.shown == nil {
		return rest
	}
	s.pend = append(s.pend, f)
	s.commq <- f
	return rest
}

// call runs fn on t, turning a panic into an error: the transaction is then
// rolled back like any failed one, and the writer goes on serving others
// instead of taking the process down.
func (s *Store) call(fn func(*Txn) error, t *Txn) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic in a write transaction (rolled back)", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error: panic in a write transaction: %v", r)
		}
	}()
	return fn(t)
}

// answerFailed answers a closure that failed. It wrote nothing, but its
// answer may rest on writes it read that are not durable yet (a refusal that
// names a holder whose claim is still being logged): a crash could lose them,
// and readers do not see them yet. So unless nothing it could read was in
// flight, it is answered with its segment, once durable, as a success would
// be; under a barrier it is answered at once and the barrier waits instead.
func (s *Store) answerFailed(f *inflight, g *segment, r *request, err error) {
	switch {
	case g.over.len() == 0 && len(s.pend) == 0:
		r.err <- err
		r.settle(nil)
	case r.durable != nil:
		r.err <- err
		f.waiting = append(f.waiting, &request{err: r.durable})
	default:
		r.failed = err
		f.waiting = append(f.waiting, r)
	}
}

// dropDurable forgets the in-flight segments that have become durable; a
// snapshot opened after this holds them. Commits complete in order, so they
// are a prefix.
func (s *Store) dropDurable() {
	n := 0
	for n < len(s.pend) && s.pend[n].done.Load() {
		n++
	}
	if n > 0 {
		clear(s.pend[:n])
		s.pend = s.pend[n:]
	}
}

// applyLoop applies durable segments, in order, as few commits as the
// engine's limits allow; each one is then dropped from the readers' view
// (the engine's committed state now holds it).
func (s *Store) applyLoop() {
	defer close(s.idle)
	var last time.Time
	every := s.eng.applyEvery()
	for f := range s.applyq {
		if wait := every - time.Since(last); wait > 0 {
			select {
			case <-time.After(wait):
			case <-s.done:
			}
		}
		last = time.Now()
		group := drain(s.applyq, []*inflight{f})
		if err := s.eng.apply(group); err != nil {
			// The log holds it: a restart applies it again.
			s.fail(err)
			continue
		}
		s.visMu.Lock()
		clear(s.visible[:len(group)])
		s.visible = s.visible[len(group):]
		s.visMu.Unlock()
	}
}

// drain appends to batch everything waiting on ch, without blocking.
func drain[T any](ch <-chan T, batch []T) []T {
	for {
		select {
		case v, ok := <-ch:
			if !ok {
				return batch
			}
			batch = append(batch, v)
		default:
			return batch
		}
	}
}
