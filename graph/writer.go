package graph

// The writer: one goroutine applies every write, a batch at a time, each
// closure as a layer of one Badger transaction.

import (
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tether-run/tether/fault"
)

func (s *Store) writeLoop() {
	defer close(s.closed)
	defer close(s.syncq)
	batch := make([]*writeRequest, 0, s.maxBatch)
	for {
		var first *writeRequest
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
		s.runBatch(batch)
	}
}

// drain runs what was queued before Close.
func (s *Store) drain() {
	for {
		select {
		case r := <-s.urgent:
			s.runBatch([]*writeRequest{r})
		case r := <-s.reqs:
			s.runBatch([]*writeRequest{r})
		default:
			return
		}
	}
}

type outcome struct {
	req    *writeRequest
	err    error
	events []Event
}

// runBatch applies the closures of a batch in order (taking any urgent
// request that arrives meanwhile before the next one), each as a layer of one
// Badger transaction, commits and syncs once, and then answers every caller.
func (s *Store) runBatch(batch []*writeRequest) {
	for len(batch) > 0 {
		batch = s.runSegment(batch)
	}
}

// maxSegment bounds how long a segment of a batch applies closures before it
// commits and answers them: a request never waits for a commit behind more
// than this plus one closure's own time (a claims request of 1000, say).
const maxSegment = 10 * time.Millisecond

// runSegment applies closures of the batch (taking urgent requests first)
// until they are done or maxSegment has passed, commits them as one Badger
// transaction, hands them to the syncer, and returns the requests left.
func (s *Store) runSegment(batch []*writeRequest) []*writeRequest {
	outcomes := make([]outcome, 0, len(batch))
	needSync := false
	b := newBatchTx(s)
	start := time.Now()
	run := func(r *writeRequest) {
		o := outcome{req: r}
		if err := r.ctx.Err(); err != nil {
			o.err = err
		} else {
			o.events, o.err = s.apply(b, r.fn)
			if o.err == nil && r.durable {
				needSync = true
			}
		}
		outcomes = append(outcomes, o)
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
		if time.Since(start) > maxSegment {
			break
		}
	}
	s.commitSegment(b, outcomes, needSync)
	return rest
}

// commitSegment commits a segment and answers its requests: those that need
// no fsync now, the rest through the syncer while the writer goes on.
func (s *Store) commitSegment(b *batchTx, outcomes []outcome, needSync bool) {
	commitErr := b.commit()
	b.discard()
	s.stats.Batches.Add(1)
	s.stats.Closures.Add(int64(len(outcomes)))
	if commitErr != nil {
		// The in-memory views already reflect the batch; the store no longer
		// matches them. Stop taking writes: a restart rebuilds from disk.
		s.fail(fmt.Errorf("error committing a batch: %w", commitErr))
		for _, o := range outcomes {
			if o.err == nil {
				o.err = fault.ErrUnavailable
			}
			o.req.err <- o.err
		}
		return
	}
	c := &committed{needSync: needSync && !s.inMem}
	for _, o := range outcomes {
		if o.err != nil || !o.req.durable || !c.needSync {
			o.req.err <- o.err
			if o.err == nil && len(o.events) > 0 {
				s.events.publish(o.events)
			}
			continue
		}
		c.waiting = append(c.waiting, o)
	}
	if len(c.waiting) > 0 {
		s.syncq <- c
	}
}

// apply runs one closure as a layer of the batch. A closure that fails
// leaves nothing behind; one that succeeds is folded into the batch and its
// commit hooks run at once, so the next closure sees its effects everywhere.
func (s *Store) apply(b *batchTx, fn func(*Tx) error) ([]Event, error) {
	tx := b.tx()
	if err := fn(tx); err != nil {
		return nil, err
	}
	if err := b.absorb(tx); err != nil {
		if errors.Is(err, errTooLarge) || errors.Is(err, badger.ErrTxnTooBig) {
			return nil, fault.Invalidf("", "the change is too large for one transaction")
		}
		return nil, err
	}
	for tenant, seq := range tx.seqs {
		s.seqs[tenant] = seq
	}
	for _, h := range tx.onCommit {
		h()
	}
	return tx.events, nil
}

// fail marks the store broken after a write could not be committed.
func (s *Store) fail(err error) {
	s.log.Error("the store stopped taking writes", "err", err)
	s.broken.Store(true)
}

// Healthy reports whether the store takes writes.
func (s *Store) Healthy() bool { return !s.broken.Load() }
