package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tether-run/tether/fault"
	"github.com/tether-run/tether/internal/clock"
)

// Options configure a Store.
type Options struct {
	Dir    string
	Clock  clock.Clock
	Logger *slog.Logger
	// InMemory keeps everything in memory (no durability); for short tests only.
	InMemory bool
	// MaxBatch bounds how many write closures share one fsync.
	MaxBatch int
}

// Store is the graph database: one Badger DB, written by exactly one goroutine.
//
// Every mutation is a closure handed to Update. The writer goroutine runs the
// closures one at a time, each in its own Badger transaction, so closures never
// conflict and event sequence numbers are assigned in commit order. Closures
// that arrive while a batch is being written share one fsync (group commit):
// each caller is acknowledged only after the sync that covers its commit.
type Store struct {
	db     *badger.DB
	clock  clock.Clock
	log    *slog.Logger
	dir    string
	inMem  bool
	reqs   chan *writeRequest
	urgent chan *writeRequest // the reaper's lane: taken before any queued request
	done   chan struct{}
	closed chan struct{}
	synced chan struct{}   // closed when the syncer has answered everything
	syncq  chan *committed // batches committed, waiting for their fsync
	once   sync.Once

	maxBatch int

	// Owned by the writer goroutine.
	seqs    map[string]uint64
	walSync walSyncer

	events *eventHub
	ready  *readyMirror
	broken atomic.Bool
	stats  StoreStats

	// queueSettings caches committed queue settings (tenantQueue ->
	// QueueSettings); written through by QueueSettingsPut's commit hook.
	queueSettings sync.Map
}

// StoreStats are running totals of the write path, for metrics.
type StoreStats struct {
	Batches   atomic.Int64 // writer batches committed
	Closures  atomic.Int64 // write transactions applied
	Syncs     atomic.Int64 // fsyncs
	SyncNanos atomic.Int64 // time spent in them
}

// Stats returns the write-path totals.
func (s *Store) Stats() *StoreStats { return &s.stats }

type writeRequest struct {
	ctx     context.Context
	fn      func(*Tx) error
	durable bool
	err     chan error
}

// Open opens (or creates) the store in opts.Dir and starts its writer.
func Open(opts Options) (*Store, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 512
	}
	bopts := badger.DefaultOptions(opts.Dir).
		WithLogger(nil).
		WithSyncWrites(false). // we fsync once per batch, see walSyncer
		WithNumVersionsToKeep(1).
		WithCompactL0OnClose(false).
		// Memory: Badger's defaults (five 64 MiB memtables, a 256 MiB block
		// cache, four compactors) let a busy store pass 2 GiB; these keep a
		// million-node store under 1 GiB with no measurable loss of speed.
		WithMemTableSize(32 << 20).
		WithNumMemtables(3).
		WithBlockCacheSize(64 << 20).
		WithIndexCacheSize(32 << 20).
		WithNumCompactors(2)
	if opts.InMemory {
		bopts = bopts.WithInMemory(true).WithDir("").WithValueDir("")
	}
	db, err := badger.Open(bopts)
	if err != nil {
		return nil, fmt.Errorf("error opening badger in %s: %w", opts.Dir, err)
	}
	s := &Store{
		db:       db,
		clock:    opts.Clock,
		log:      opts.Logger,
		dir:      opts.Dir,
		inMem:    opts.InMemory,
		reqs:     make(chan *writeRequest, 4096),
		urgent:   make(chan *writeRequest, 64),
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
		synced:   make(chan struct{}),
		syncq:    make(chan *committed, 256),
		maxBatch: opts.MaxBatch,
		seqs:     map[string]uint64{},
		walSync:  walSyncer{dir: opts.Dir},
		events:   newEventHub(),
		ready:    newReadyMirror(opts.Clock),
	}
	if err := s.rebuildReady(); err != nil {
		db.Close()
		return nil, fmt.Errorf("error rebuilding the ready index: %w", err)
	}
	go s.writeLoop()
	go s.syncLoop()
	return s, nil
}

// Close stops accepting writes, finishes the ones queued, syncs and closes Badger.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		<-s.closed
		<-s.synced
		s.ready.close()
		if !s.inMem {
			err = errors.Join(s.db.Sync(), s.walSync.syncRotated(true))
		}
		err = errors.Join(err, s.db.Close())
	})
	return err
}

// Clock is the store's clock.
func (s *Store) Clock() clock.Clock { return s.clock }

// Update runs fn in a write transaction on the writer goroutine. If fn returns
// an error nothing it wrote is kept. When durable is true Update returns only
// after the commit is on stable storage; otherwise after it is committed
// (visible, and safe against a process crash, but not yet fsynced).
func (s *Store) Update(ctx context.Context, durable bool, fn func(*Tx) error) error {
	return s.submit(ctx, s.reqs, durable, fn)
}

// UpdateUrgent is Update for work that must not wait behind queued requests
// (settling expired leases): the writer takes it before the next queued one.
func (s *Store) UpdateUrgent(ctx context.Context, durable bool, fn func(*Tx) error) error {
	return s.submit(ctx, s.urgent, durable, fn)
}

func (s *Store) submit(ctx context.Context, lane chan *writeRequest, durable bool, fn func(*Tx) error) error {
	req := &writeRequest{ctx: ctx, fn: fn, durable: durable, err: make(chan error, 1)}
	if s.broken.Load() {
		return fault.ErrUnavailable
	}
	select {
	case <-s.done:
		return fault.ErrUnavailable
	default:
	}
	select {
	case lane <- req:
	case <-s.done:
		return fault.ErrUnavailable
	case <-ctx.Done():
		return ctx.Err()
	}
	// The writer skips a request whose context ended before its turn; one that
	// ends later may still commit, as with any database.
	select {
	case err := <-req.err:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// View runs fn in a read-only snapshot transaction.
func (s *Store) View(fn func(*Tx) error) error {
	return s.db.View(func(btx *badger.Txn) error {
		return fn(&Tx{rtx: btx, store: s, now: s.clock.Now()})
	})
}

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
	outcomes := make([]outcome, 0, len(batch))
	needSync := false
	b := newBatchTx(s)
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
	for _, r := range batch {
	urgent:
		for {
			select {
			case u := <-s.urgent:
				run(u)
			default:
				break urgent
			}
		}
		run(r)
	}
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
	// Requests that need no fsync are answered now; the rest wait for the
	// syncer, while this goroutine goes on with the next batch.
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

// committed is a batch whose durable requests wait for an fsync.
type committed struct {
	needSync bool
	waiting  []outcome
}

// syncLoop makes committed batches durable: one fsync covers every batch
// committed before it started, and only then are their callers answered. It
// runs beside the writer, so the writer applies the next batch during the
// fsync of the last one (pipelined group commit).
func (s *Store) syncLoop() {
	defer close(s.synced)
	for c := range s.syncq {
		group := []*committed{c}
	gather:
		for {
			select {
			case more, ok := <-s.syncq:
				if !ok {
					break gather
				}
				group = append(group, more)
			default:
				break gather
			}
		}
		start := time.Now()
		err := errors.Join(s.db.Sync(), s.walSync.syncRotated(false))
		s.stats.Syncs.Add(1)
		s.stats.SyncNanos.Add(time.Since(start).Nanoseconds())
		if err != nil {
			s.log.Error("error syncing store", "err", err)
		}
		for _, c := range group {
			for _, o := range c.waiting {
				if err != nil {
					o.req.err <- fault.ErrUnavailable
					continue
				}
				o.req.err <- nil
				if len(o.events) > 0 {
					s.events.publish(o.events)
				}
			}
		}
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

// walSyncer closes the gap that db.Sync leaves: it syncs only the active
// memtable's WAL, so a memtable that rotated out between a commit and the sync
// would hold acknowledged writes that are not on disk until Badger flushes it.
// After each sync we fsync every older .mem file we have not synced since it
// stopped being written to.
type walSyncer struct {
	dir    string
	synced map[string]bool
}

func (w *walSyncer) syncRotated(all bool) error {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("error listing %s: %w", w.dir, err)
	}
	var mems []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".mem") {
			mems = append(mems, e.Name())
		}
	}
	if len(mems) <= 1 && !all {
		return nil
	}
	if w.synced == nil {
		w.synced = map[string]bool{}
	}
	// Names are zero-padded fids, so lexical order is creation order; the last
	// one is the active memtable that db.Sync already covered.
	present := map[string]bool{}
	var errs []error
	for i, name := range mems {
		present[name] = true
		if (i == len(mems)-1 && !all) || w.synced[name] {
			continue
		}
		f, err := os.OpenFile(filepath.Join(w.dir, name), os.O_RDWR, 0)
		if err != nil {
			if os.IsNotExist(err) {
				continue // flushed and removed meanwhile: it is in an SST now
			}
			errs = append(errs, err)
			continue
		}
		if err := f.Sync(); err != nil {
			errs = append(errs, err)
		} else if i != len(mems)-1 {
			w.synced[name] = true
		}
		f.Close()
	}
	for name := range w.synced {
		if !present[name] {
			delete(w.synced, name)
		}
	}
	return errors.Join(errs...)
}
