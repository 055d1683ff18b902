package graphstore

import (
	"time"

	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/records"
)

// Options configure a Store.
type Options struct {
	Dir    string
	Clock  clock.Clock
	Logger *slog.Logger
	// InMemory keeps everything in memory (no durability); for short tests only.
	InMemory bool
	// MaxBatch bounds how many write closures share one commit.
	MaxBatch int
	// TenantInflight bounds the writes one tenant may have queued or running
	// at once (default 64; see kv's fairness.go).
	TenantInflight int
	// KV, when set, is the storage engine to use (an etcd-backed store, say)
	// instead of Badger in Dir; Dir then only names it in messages. The
	// graph closes it on Close. Its reads being round trips, the store
	// then keeps every live node's record in memory (Store.liveRecords).
	KV *kv.Store
	// DuringRebuild, when set, is called before Open rebuilds the in-memory
	// state from the records, and the func it returns once the rebuild is
	// done: the process tunes its runtime for the scan there (serve pauses
	// the proportional GC, its rebuild_gc.go). nil leaves the runtime alone.
	DuringRebuild func() (done func())
	// ReleaseScanPages has Open reopen the storage engine
	// (kv.Store.Reopen) after the rebuild has scanned every record and
	// before the writer starts, so the table pages the scan mapped in are
	// let go of and the server's RSS once ready is its live state (Badger;
	// an engine that maps nothing does nothing). server.Open sets it.
	ReleaseScanPages bool
	// ListSyncEvery is how often the list indexes catch up (0: indexes'
	// default, 50 ms). The simulation sets it longer, to spare its fake
	// hours the wake-ups.
	ListSyncEvery time.Duration
}

// Store is the graph: its records in a kv.Store, and the in-memory state
// derived from them (package indexes), which write transactions keep in step on the
// writer goroutine.
type Store struct {
	kv    *kv.Store
	clock clock.Clock
	log   *slog.Logger
	// liveRecords keeps the record of every live node in memory, not only
	// of running ones: set for an engine passed in (Options.KV, etcd's),
	// whose reads are round trips a claim would wait for on the writer.
	// Badger's reads are local and cached, so there the backlog's records
	// stay on disk.
	liveRecords bool

	table  *indexes.Table
	blobs  *blobTable // the blob state (blob_records.go), under its own lock
	events *eventHub
	ready  *indexes.ReadyMirror
	marks  *marks // retention marks (retention.go)

	// Owned by the writer goroutine.
	seqs    map[string]uint64
	spare   txMaps // the last successful write transaction's maps, for the next
	scratch []byte // encoding buffer
	// keyScratch is the writer's builder for keys handed to kv Set and
	// Delete (Tx.scratchKey); only write transactions use it, one at a time
	keyScratch records.KeyBuilder

	// queueSettings caches committed queue settings (indexes.TenantQueue ->
	// QueueSettings); written through by QueueSettingsPut's commit hook.
	queueSettings sync.Map

	// flow is flow control's state: slots held per concurrency key, the
	// cached limits and budgets, the start-rate buckets (flow_state.go).
	flow *flowState

	// goneHooks run inside every transaction that removes a node
	// (OnNodeGone); registered before the store serves writes.
	goneHooks []NodeGoneHook

	// meter is told what each transaction did to queues (SetQueueMeter;
	// indexes' queue_meter.go).
	meter queueMeters

	// closing stops the list indexes' catch-up loop (indexes.Table.SyncLoop).
	closing   chan struct{}
	closeOnce sync.Once
}

// NodeGoneHook runs inside a write transaction that removes node id of
// tenant, a delete or retention's purge, after the node's record is gone:
// what it writes commits with the removal, and its error fails it.
type NodeGoneHook func(tx *Tx, tenant, id string) error

// OnNodeGone registers h for every node removal. Register hooks before the
// store serves writes (the services built on it do, in their constructors);
// they run on the writer, in the order registered.
func (s *Store) OnNodeGone(h NodeGoneHook) { s.goneHooks = append(s.goneHooks, h) }

// nodeGone runs the NodeGoneHooks for a node this transaction removed.
func (tx *Tx) nodeGone(tenant, id string) error {
	for _, h := range tx.store.goneHooks {
		if err := h(tx, tenant, id); err != nil {
			return err
		}
	}
	return nil
}

// StoreStats are running totals of the write path, for metrics.
type StoreStats = kv.Stats

// Stats returns the write-path totals.
func (s *Store) Stats() *StoreStats { return s.kv.Stats() }

// Open opens (or creates) the store in opts.Dir, rebuilds the in-memory
// state from its records (within opts.DuringRebuild), reopens the engine
// when opts.ReleaseScanPages says so, and starts its writer.
func Open(opts Options) (*Store, error) {
	opts.Clock = clock.OrReal(opts.Clock)
	opts.Logger = logger.OrDiscard(opts.Logger)
	db := opts.KV
	if db == nil {
		var err error
		db, err = kv.Open(kv.Options{
			Dir: opts.Dir, Logger: opts.Logger, InMemory: opts.InMemory,
			MaxBatch: opts.MaxBatch, KeyInflight: opts.TenantInflight,
			Reopens: opts.ReleaseScanPages,
		})
		if err != nil {
			return nil, err
		}
	}
	s := &Store{
		kv:          db,
		liveRecords: opts.KV != nil,
		clock:       opts.Clock,
		log:         opts.Logger,
		table:       indexes.NewTable(),
		blobs:       newBlobTable(),
		events:      newEventHub(),
		ready:       indexes.NewReadyMirror(opts.Clock),
		marks:       newMarks(),
		flow:        newFlowState(),
		seqs:        map[string]uint64{},
		closing:     make(chan struct{}),
	}
	stored, err := s.checkFormat(opts.Dir)
	if err != nil {
		db.Close()
		return nil, err
	}
	started := time.Now()
	done := func() {}
	if opts.DuringRebuild != nil {
		done = opts.DuringRebuild()
	}
	err = s.rebuild()
	done()
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("error rebuilding the in-memory state: %w", err)
	}
	s.log.Info("in-memory state rebuilt", "nodes", s.table.Nodes.Len(), "took", time.Since(started).Round(time.Millisecond))
	if opts.ReleaseScanPages {
		if err := db.Reopen(); err != nil {
			db.Close()
			return nil, err
		}
	}
	db.Start()
	if opts.ListSyncEvery > 0 {
		go s.table.SyncLoopEvery(s.closing, opts.ListSyncEvery)
	} else {
		go s.table.SyncLoop(s.closing)
	}
	wrote, err := s.writeFormat(stored)
	if err != nil {
		s.Close()
		return nil, err
	}
	if wrote && stored.Version != 0 && s.log != nil {
		s.log.Info("store format markers written", "from", stored.Version, "to", records.FormatVersion)
	}
	return s, nil
}

// Close stops accepting writes, finishes the ones queued and closes the store.
func (s *Store) Close() error {
	err := s.kv.Close()
	s.ready.Close()
	s.closeOnce.Do(func() { close(s.closing) })
	return err
}

// KV is the storage engine under the graph, for what works on every record
// alike (a backup).
func (s *Store) KV() *kv.Store { return s.kv }

// Clock is the store's clock.
func (s *Store) Clock() clock.Clock { return s.clock }

// WithTenant marks ctx as acting for tenant, so the store can keep tenants
// fair. Server-wide work (the reaper) carries no tenant and is not gated.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return kv.WithFairnessKey(ctx, tenant)
}

// Update runs fn in a write transaction on the writer goroutine. If fn returns
// an error nothing it wrote is kept. Update returns once fn's writes, and
// every write before them, are on stable storage and visible to View.
func (s *Store) Update(ctx context.Context, fn func(*Tx) error) error {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		return s.tracedUpdate(ctx, span, "durable", s.update, fn)
	}
	return s.update(ctx, fn)
}

func (s *Store) update(ctx context.Context, fn func(*Tx) error) error {
	return s.kv.Update(ctx, s.wrap(fn))
}

// WithBarrier returns a context whose Updates return once applied, and a
// barrier whose Wait returns once all of them are durable (see kv.Barrier):
// a batch of writes then shares one wait for the log.
func WithBarrier(ctx context.Context) (context.Context, *kv.Barrier) {
	return kv.WithBarrier(ctx)
}

// UpdateEager is Update for a write its caller need not see durable and
// readers may see before it is (a lease renewal, which a restart only ever
// lengthens): it returns once fn is applied, and its writes are shown to
// readers at once. When a record it writes has an earlier write not yet
// durable (the claim it renews), it is answered and shown once durable
// instead, so it never shows that write early (kv.Store.UpdateEager). fn
// must rest its result on nothing but the records it writes.
func (s *Store) UpdateEager(ctx context.Context, fn func(*Tx) error) error {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		return s.tracedUpdate(ctx, span, "eager", s.updateEager, fn)
	}
	return s.updateEager(ctx, fn)
}

func (s *Store) updateEager(ctx context.Context, fn func(*Tx) error) error {
	return s.kv.UpdateEager(ctx, s.wrap(fn))
}

// UpdateUrgent is Update for work that must not wait behind queued requests
// (settling expired leases): the writer takes it before the next queued one.
// It is eager: a settlement a crash loses is made again at restart.
func (s *Store) UpdateUrgent(ctx context.Context, fn func(*Tx) error) error {
	return s.kv.UpdateUrgent(ctx, s.wrap(fn))
}

func (s *Store) wrap(fn func(*Tx) error) func(*kv.Txn) error {
	return func(ktx *kv.Txn) error {
		tx := &Tx{kv: ktx, store: s, now: s.clock.Now(), writable: true}
		s.spare.lend(tx)
		// The state is folded in first, so every other hook sees it.
		ktx.OnApply(tx.apply)
		if err := fn(tx); err != nil {
			return err
		}
		if err := tx.finish(); err != nil {
			return err
		}
		if evs := tx.events; len(evs) > 0 {
			ktx.OnDurable(func() { s.events.publish(evs) })
		}
		return nil
	}
}

// View runs fn in a read-only transaction. Records are read from a snapshot
// that holds what is durable, and the renewals answered (UpdateEager) before
// it began; the in-memory indexes it walks may be a few commits ahead, so
// every list checks each record it reads.
func (s *Store) View(fn func(*Tx) error) error {
	return s.kv.View(func(ktx *kv.Txn) error {
		return fn(&Tx{kv: ktx, store: s, now: s.clock.Now()})
	})
}

// Healthy reports whether the store takes writes.
func (s *Store) Healthy() bool { return s.kv.Healthy() }

// Full is the fault writes get while the data directory's disk is full,
// or nil (kv.Store.Full).
func (s *Store) Full() error { return s.kv.Full() }

// queueMeterBox holds a QueueMeter for an atomic.Pointer.
type queueMeterBox struct{ m indexes.QueueMeter }

// queueMeters is the store's meter, nil for none.
type queueMeters = atomic.Pointer[queueMeterBox]

// SetQueueMeter has m told of every later transaction's outcomes (nil: no
// meter, and nothing is collected for one).
func (s *Store) SetQueueMeter(m indexes.QueueMeter) {
	if m == nil {
		s.meter.Store(nil)
		return
	}
	s.meter.Store(&queueMeterBox{m})
}
