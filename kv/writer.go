package kv

// The writer: one goroutine applies every write, a segment at a time, each
// closure writing into the segment's overlay, and hands each segment to the
// logger without waiting for it; the logger makes it durable and the applier
// writes it into Badger.

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tether-run/tether/fault"
)

// inflight is a segment handed to the logger: its writes, and the requests
// and hooks that wait for them to be durable.
type inflight struct {
	over      *overlay
	seq       uint64     // its log record (0: none)
	waiting   []*request // answered once durable
	onDurable []func()
	done      atomic.Bool // set by the applier once Badger holds it
}

// segment is the writer's current unit of work: the writes applied so far.
// Reads fall through to the segments handed on but not yet in Badger
// (Store.pend), then to a Badger snapshot.
type segment struct {
	s    *Store
	over *overlay
	snap *badger.Txn // opened on the first read that needs Badger
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

// snapshot opens the segment's Badger snapshot. Badger makes it wait for
// every commit already handed over, so it holds everything not in flight
// (and, harmlessly, some of what is).
func (g *segment) snapshot() (*badger.Txn, error) {
	if g.snap == nil {
		g.s.stats.Snapshots.Add(1)
		g.snap = g.s.db.NewTransaction(false)
	}
	return g.snap, nil
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
// one Badger transaction takes, hands the segment to the logger and
// returns the requests left.
func (s *Store) runSegment(batch []*request) []*request {
	s.dropDurable()
	g := &segment{s: s, over: newOverlay()}
	f := &inflight{over: g.over}
	start := time.Now()
	maxCount, maxSize := s.db.MaxBatchCount()*8/10, s.db.MaxBatchSize()*8/10
	full := false
	run := func(r *request) {
		if err := r.ctx.Err(); err != nil {
			r.err <- err
			r.settle(nil)
			return
		}
		t := &Txn{w: g}
		err := s.call(r.fn, t)
		if err == nil && (int64(len(t.written)) > maxCount || t.size > maxSize) {
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
		g.snap.Discard()
	}
	if len(f.waiting) == 0 && len(f.onDurable) == 0 && g.over.len() == 0 {
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

// logLoop makes the segments the writer hands over durable, in order: every
// segment waiting when a round starts shares one append and one fdatasync of
// the log. Once durable, a segment becomes visible to readers (View), its
// callers are answered and its OnDurable hooks run; then it goes to the
// applier, which writes it into Badger.
func (s *Store) logLoop() {
	defer close(s.applyq)
	for f := range s.commq {
		group := drain(s.commq, []*inflight{f})
		err := s.logGroup(group)
		if err != nil {
			s.fail(err)
			for _, f := range group {
				for _, r := range f.waiting {
					r.err <- fault.ErrUnavailable
				}
			}
			continue
		}
		s.visMu.Lock()
		s.visible = append(s.visible, group...)
		s.visMu.Unlock()
		for _, f := range group {
			for _, h := range f.onDurable {
				h()
			}
			for _, r := range f.waiting {
				r.err <- r.failed
			}
		}
		for _, f := range group {
			s.applyq <- f
		}
	}
}

// logGroup appends a record per segment of the group and syncs them once.
// Without a log (in memory) it writes the group into Badger instead.
func (s *Store) logGroup(group []*inflight) error {
	if s.broken.Load() {
		return errors.New("the store is broken")
	}
	if s.wal == nil {
		return s.apply(group)
	}
	var keys, bytes int64
	for _, f := range group {
		if f.over.len() == 0 {
			continue
		}
		f.seq = s.wal.add(f.over)
		if len(s.wal.buf) > walSegmentSize/4 {
			// A group this large is written in parts, so that no write is
			// larger than a segment.
			if err := s.wal.flush(); err != nil {
				return fmt.Errorf("error writing the log: %w", err)
			}
		}
		keys += int64(f.over.len())
		for k, v := range f.over.vals {
			bytes += int64(len(k) + len(v.val))
		}
	}
	start := time.Now()
	if err := s.wal.flush(); err != nil {
		return fmt.Errorf("error writing the log: %w", err)
	}
	s.stats.Syncs.Add(1)
	s.stats.SyncNanos.Add(time.Since(start).Nanoseconds())
	s.stats.Keys.Add(keys)
	s.stats.Bytes.Add(bytes)
	if err := s.wal.removeApplied(s.applied.Load()); err != nil {
		s.log.Warn("error removing applied log segments", "err", err)
	}
	return nil
}

// applyLoop writes durable segments into Badger, in order, as few commits as
// Badger's limits allow; each one is then dropped from the readers' view
// (Badger now holds it) and from the log (once its whole segment is in).
func (s *Store) applyLoop() {
	defer close(s.idle)
	var last time.Time
	for f := range s.applyq {
		// Each Badger commit is synced (msync of its memtable), and readers
		// see what is durable in the log anyway: commit at most every
		// applyEvery, gathering everything logged meanwhile.
		if wait := applyEvery - time.Since(last); wait > 0 && s.wal != nil {
			select {
			case <-time.After(wait):
			case <-s.done:
			}
		}
		last = time.Now()
		group := drain(s.applyq, []*inflight{f})
		// Without a log (in memory) the logger wrote the group into Badger.
		if s.wal != nil {
			if err := s.apply(group); err != nil {
				// The log holds it: a restart applies it again.
				s.fail(err)
				continue
			}
		}
		s.visMu.Lock()
		clear(s.visible[:len(group)])
		s.visible = s.visible[len(group):]
		s.visMu.Unlock()
	}
}

// applyEvery is the least time between two of the applier's Badger commits.
const applyEvery = 5 * time.Millisecond

// apply writes segments into Badger, as few commits as Badger's limits
// allow (commit splits a run that does not fit), and marks them done. Badger
// need not take a segment atomically: until all of it is in, readers and the
// writer see it in the log's segments, and a crash replays it from the log.
func (s *Store) apply(group []*inflight) error {
	maxCount, maxSize := s.db.MaxBatchCount()*8/10, s.db.MaxBatchSize()*8/10
	for i := 0; i < len(group); {
		j, count, size := i, int64(0), int64(0)
		for j < len(group) && (j == i || (count+int64(group[j].over.len()) <= maxCount && size+group[j].over.size <= maxSize)) {
			count += int64(group[j].over.len())
			size += group[j].over.size
			j++
		}
		if err := s.commit(group[i:j]); err != nil {
			return err
		}
		for _, f := range group[i:j] {
			f.done.Store(true)
			if f.seq > 0 {
				s.applied.Store(f.seq)
			}
		}
		i = j
	}
	return nil
}

// commit writes segments as one Badger transaction; with SyncWrites, Commit
// returns once Badger has it on stable storage too, so the log may drop it.
func (s *Store) commit(segs []*inflight) error {
	if s.broken.Load() {
		return errors.New("the store is broken")
	}
	merged := segs[0].over
	if len(segs) > 1 {
		merged = newOverlay()
		for _, f := range segs {
			merged.absorb(f.over)
		}
	}
	if merged.len() == 0 {
		return nil
	}
	txn := s.db.NewTransaction(true)
	defer func() { txn.Discard() }()
	for k, v := range merged.vals {
		e := walEntry{key: []byte(k), val: v.val, deleted: v.deleted, expiresAt: v.expiresAt}
		err := e.stage(txn)
		if err == badger.ErrTxnTooBig {
			// More than one Badger transaction holds: commit what is staged
			// and go on. Nothing reads Badger's half-way state: readers and
			// the writer see these writes in the log's segments until all
			// are in, and a crash in between replays the whole log record.
			if err = txn.Commit(); err != nil {
				return fmt.Errorf("error committing: %w", err)
			}
			s.stats.Batches.Add(1)
			txn = s.db.NewTransaction(true)
			err = e.stage(txn)
		}
		if err != nil {
			return fmt.Errorf("error staging a commit: %w", err)
		}
	}
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("error committing: %w", err)
	}
	s.stats.Batches.Add(1)
	return nil
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
