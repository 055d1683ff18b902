package kv

// Larger groups across shards, on PostgreSQL: the stores of one cluster
// server (one per shard it owns, each with its own writer and guard) can
// share a PostgresBatcher, which sends what their writers commit at the
// same moment as one transaction in one round trip (one WAL flush), each
// store's part under its own guard:
//
//	BEGIN;
//	  guard_1 FOR SHARE; upsert_1 WHERE EXISTS(guard_1); delete_1 AND EXISTS(guard_1);
//	  guard_2 FOR SHARE; upsert_2 WHERE EXISTS(guard_2); ...
//	COMMIT
//
// A guard that finds no row makes its own part's writes no-ops and fails
// that store alone; the other parts commit. Every part commits or none
// does, and each store has at most one commit in flight (its writer waits
// for it), so its commits keep its order. While the batcher's transactions
// are in flight the next one gathers everything that arrives: under load,
// PostgreSQL gets fewer, larger transactions instead of one per shard.

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tether-run/tether/internal/logger"
)

// PostgresBatcher sends the commits of several PostgreSQL stores as one
// transaction. Create it with NewPostgresBatcher, give it to each store
// (PostgresOptions.Batcher) and Close it once they are closed.
type PostgresBatcher struct {
	pool    *pgxpool.Pool
	timeout time.Duration
	log     *slog.Logger
	reqs    chan *postgresReq
	slots   chan struct{} // one per transaction in flight
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
	sending sync.WaitGroup

	sent, parts atomic.Int64

	// In tests: queued runs once a commit is queued, beforeSend before a
	// transaction of parts parts is sent (set before the first commit).
	queued     func()
	beforeSend func(parts int)
}

// PostgresBatcherOptions configure a PostgresBatcher.
type PostgresBatcherOptions struct {
	// InFlight is how many transactions may be in flight at once
	// (default 2: one commits while the next gathers).
	InFlight int
	// Timeout bounds each transaction (default 10 s); one that times out
	// breaks every store with a part in it.
	Timeout time.Duration
	Logger  *slog.Logger
}

// postgresReq is one store's part waiting for the batcher.
type postgresReq struct {
	part *postgresPart
	res  chan postgresRes
}

type postgresRes struct {
	held bool
	err  error
}

// NewPostgresBatcher starts a batcher whose transactions go to pool.
func NewPostgresBatcher(pool *pgxpool.Pool, opts PostgresBatcherOptions) *PostgresBatcher {
	if opts.InFlight <= 0 {
		opts.InFlight = 2
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	b := &PostgresBatcher{
		pool: pool, timeout: opts.Timeout, log: logger.OrDiscard(opts.Logger),
		reqs: make(chan *postgresReq, 256), slots: make(chan struct{}, opts.InFlight),
		stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	go b.loop()
	return b
}

// Close stops the batcher once the transactions in flight are answered;
// commits sent after it fail.
func (b *PostgresBatcher) Close() {
	b.once.Do(func() { close(b.stop) })
	<-b.stopped
}

// Stats are the transactions sent and the stores' parts they held.
func (b *PostgresBatcher) Stats() (sent, parts int64) {
	return b.sent.Load(), b.parts.Load()
}

var errPostgresBatcherClosed = errors.New("the PostgreSQL batcher is closed")

// commit sends one store's part with whatever else is waiting and reports
// whether its guard held.
func (b *PostgresBatcher) commit(p *postgresPart) (bool, error) {
	r := &postgresReq{part: p, res: make(chan postgresRes, 1)}
	select {
	case b.reqs <- r:
	case <-b.stop:
		return false, errPostgresBatcherClosed
	}
	if b.queued != nil {
		b.queued()
	}
	select {
	case res := <-r.res:
		return res.held, res.err
	case <-b.stopped:
		// Stopped after r was queued: every transaction in flight was
		// answered before, so r was answered or never will be.
		select {
		case res := <-r.res:
			return res.held, res.err
		default:
			return false, errPostgresBatcherClosed
		}
	}
}

func (b *PostgresBatcher) loop() {
	defer close(b.stopped)
	defer b.sending.Wait()
	var held *postgresReq
	for {
		first := held
		held = nil
		if first == nil {
			select {
			case first = <-b.reqs:
			case <-b.stop:
				b.drainClosed()
				return
			}
		}
		// Wait for a free slot: what arrives meanwhile joins this
		// transaction.
		select {
		case b.slots <- struct{}{}:
		case <-b.stop:
			first.res <- postgresRes{err: errPostgresBatcherClosed}
			b.drainClosed()
			return
		}
		batch := []*postgresReq{first}
		keys, size := first.part.keys(), first.part.size
	gather:
		for {
			select {
			case r := <-b.reqs:
				// Within one transaction's limits (a part larger than
				// them goes alone).
				if keys+r.part.keys() > postgresTxnKeys || size+r.part.size > postgresTxnBytes {
					held = r
					break gather
				}
				batch = append(batch, r)
				keys, size = keys+r.part.keys(), size+r.part.size
			default:
				break gather
			}
		}
		b.sending.Add(1)
		go func() {
			defer b.sending.Done()
			b.send(batch)
			<-b.slots
		}()
	}
}

// drainClosed answers what is still queued once the batcher stops.
func (b *PostgresBatcher) drainClosed() {
	for {
		select {
		case r := <-b.reqs:
			r.res <- postgresRes{err: errPostgresBatcherClosed}
		default:
			return
		}
	}
}

// send commits a batch as one transaction (commitParts: sent again only
// when it certainly did not run) and answers each part.
func (b *PostgresBatcher) send(batch []*postgresReq) {
	if b.beforeSend != nil {
		b.beforeSend(len(batch))
	}
	parts := make([]*postgresPart, len(batch))
	for i, r := range batch {
		parts[i] = r.part
	}
	held, err := commitParts(b.pool, b.timeout, b.log, parts, func() {
		b.sent.Add(1)
		b.parts.Add(int64(len(parts)))
	})
	for i, r := range batch {
		if err != nil {
			r.res <- postgresRes{err: err}
			continue
		}
		r.res <- postgresRes{held: held[i]}
	}
}
