package kv

// The writer: one goroutine applies every write, a segment at a time, each
// closure as a layer of the segment's overlay, and hands each segment to the
// committer without waiting for it.

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tether-run/tether/fault"
)

// inflight is a segment handed to the committer: its writes, and the
// requests and hooks that wait for them to be durable.
type inflight struct {
	over      *overlay
	waiting   []*request // answered once durable
	onDurable []func()
	done      atomic.Bool // set by the committer once durable
}

// segment is the writer's current unit of work: the layers applied so far,
// and the committed-but-not-durable segments before it.
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
// to the committer: a request never waits for its commit behind more than
// this plus one closure's own time (a claims request of 1000, say).
const maxSegment = 10 * time.Millisecond

// runSegment applies closures of the batch (taking urgent requests first)
// until they are done, maxSegment has passed or the segment is as large as
// one Badger transaction takes, hands the segment to the committer and
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
			return
		}
		t := &Txn{w: g, layer: newOverlay()}
		err := r.fn(t)
		if err == nil && (int64(t.layer.len()) > maxCount || t.layer.size > maxSize) {
			err = fault.Invalidf("", "the change is too large for one transaction")
		}
		if err != nil {
			r.err <- err
			return
		}
		g.over.absorb(t.layer)
		s.stats.Closures.Add(1)
		for _, h := range t.onApply {
			h()
		}
		f.onDurable = append(f.onDurable, t.onDurable...)
		f.waiting = append(f.waiting, r)
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

// commitLoop commits the segments the writer hands over, in order: every
// segment waiting when a commit starts shares that commit (and its fsync),
// and its callers are answered and its OnDurable hooks run only after it.
func (s *Store) commitLoop() {
	defer close(s.idle)
	maxCount, maxSize := s.db.MaxBatchCount()*8/10, s.db.MaxBatchSize()*8/10
	for f := range s.commq {
		group := []*inflight{f}
	gather:
		for {
			select {
			case more, ok := <-s.commq:
				if !ok {
					break gather
				}
				group = append(group, more)
			default:
				break gather
			}
		}
		// Commit in runs that fit one Badger transaction; a segment is never
		// split across two, so each stays atomic.
		var err error
		for i := 0; i < len(group) && err == nil; {
			j, count, size := i, int64(0), int64(0)
			for j < len(group) && (j == i || (count+int64(group[j].over.len()) <= maxCount && size+group[j].over.size <= maxSize)) {
				count += int64(group[j].over.len())
				size += group[j].over.size
				j++
			}
			err = s.commit(group[i:j])
			i = j
		}
		for _, f := range group {
			if err != nil {
				s.fail(err)
				for _, r := range f.waiting {
					r.err <- fault.ErrUnavailable
				}
				continue
			}
			f.done.Store(true)
			for _, h := range f.onDurable {
				h()
			}
			for _, r := range f.waiting {
				r.err <- nil
			}
		}
	}
}

// commit writes segments as one Badger transaction; with SyncWrites, Commit
// returns once it is on stable storage.
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
	start := time.Now()
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	var bytes int64
	for k, v := range merged.vals {
		var err error
		if v.deleted {
			err = txn.Delete([]byte(k))
		} else {
			e := badger.NewEntry([]byte(k), v.val)
			e.ExpiresAt = v.expiresAt
			err = txn.SetEntry(e)
		}
		if err != nil {
			return fmt.Errorf("error staging a commit: %w", err)
		}
		bytes += int64(len(k) + len(v.val))
	}
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("error committing: %w", err)
	}
	s.stats.Batches.Add(1)
	s.stats.Syncs.Add(1)
	s.stats.SyncNanos.Add(time.Since(start).Nanoseconds())
	s.stats.Keys.Add(int64(merged.len()))
	s.stats.Bytes.Add(bytes)
	return nil
}
