package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

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
	// TenantInflight bounds the writes one tenant may have queued or running
	// at once (default 64; see fairness.go).
	TenantInflight int
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

	gates *gates // per-tenant limits on writes in flight

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
	if opts.TenantInflight <= 0 {
		opts.TenantInflight = 64
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
		gates:    &gates{size: opts.TenantInflight},
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
	if t := tenantOf(ctx); t != "" {
		gate := s.gates.of(t)
		select {
		case gate <- struct{}{}:
			defer func() { <-gate }()
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return fault.ErrUnavailable
		}
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
