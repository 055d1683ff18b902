package kv

// Engine 3: memory, for the simulation (internal/sim). A MemDisk plays the
// durable medium, which outlives the Stores opened on it; faults are
// injected into it: a group's write fails, its sync is slow, the process
// crashes with a group written and not yet synced.

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/tether-run/tether/internal/logger"
)

// MemOptions configure a Store on a MemDisk.
type MemOptions struct {
	Logger      *slog.Logger
	MaxBatch    int
	KeyInflight int
}

// MemDisk is the durable state of in-memory Stores: what survives a crash.
// One Store at a time is opened on it (OpenMem); Crash ends that one's
// life as a power cut would, and the next OpenMem sees what survived.
type MemDisk struct {
	mu sync.Mutex
	// synced holds every group that was synced (acknowledged) and every
	// torn group a crash kept.
	synced *btree.BTreeG[memItem]
	// unsynced is the group being synced: written, not yet acknowledged,
	// in segment order. A crash keeps a prefix of its segments.
	unsynced []*overlay
	// gen is the life of the Store opened last: Crash ends it, and a
	// Store of an earlier life can no longer write.
	gen uint64

	// The faults the next groups meet (MemFaults).
	failNext  error
	syncDelay time.Duration
	groups    uint64 // groups synced, for tests
}

// memItem is one live key.
type memItem struct {
	key       string
	val       []byte
	expiresAt uint64 // unix seconds; 0: never
}

func memLess(a, b memItem) bool { return a.key < b.key }

// errCrashed is a write by a Store whose life a crash ended.
var errCrashed = errors.New("kv: the in-memory store crashed")

// NewMemDisk is an empty disk.
func NewMemDisk() *MemDisk {
	return &MemDisk{synced: btree.NewG(16, memLess)}
}

// FailNext makes the next group's write fail with err before anything of
// it is written: its callers are answered an error and the store breaks,
// as after a failed log write.
func (d *MemDisk) FailNext(err error) {
	d.mu.Lock()
	d.failNext = err
	d.mu.Unlock()
}

// SetSyncDelay makes every group's sync take delay (0: none) from now on:
// the group is written at once and acknowledged once the delay has passed,
// on the caller's clock (a synctest bubble's fake time in the simulation).
func (d *MemDisk) SetSyncDelay(delay time.Duration) {
	d.mu.Lock()
	d.syncDelay = delay
	d.mu.Unlock()
}

// Syncing reports whether a group is written and not yet synced.
func (d *MemDisk) Syncing() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.unsynced) > 0
}

// Syncs is how many groups the disk has synced.
func (d *MemDisk) Syncs() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.groups
}

// Crash cuts the power: the Store opened on the disk can write nothing
// more (its writes fail; it must still be closed), and of the group it was
// syncing, keep(n) of its n segments survive, a prefix, as a log replayed
// up to its first torn record keeps them. keep returns 0..n; nil keeps
// none. It returns how many segments were in flight and how many were kept.
func (d *MemDisk) Crash(keep func(n int) int) (inflight, kept int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	inflight = len(d.unsynced)
	if keep != nil && inflight > 0 {
		kept = min(max(keep(inflight), 0), inflight)
	}
	// The Store of the ended life keeps reading the tree it had; the next
	// one reads a copy.
	t := d.synced.Clone()
	for _, o := range d.unsynced[:kept] {
		writeOverlay(t, o)
	}
	d.synced, d.unsynced = t, nil
	return inflight, kept
}

// writeOverlay writes o's sets and deletes into t.
func writeOverlay(t *btree.BTreeG[memItem], o *overlay) {
	for k, v := range o.vals {
		if v.deleted {
			t.Delete(memItem{key: k})
			continue
		}
		t.ReplaceOrInsert(memItem{key: k, val: v.val, expiresAt: v.expiresAt})
	}
}

// OpenMem opens a Store on disk, which holds what the Stores before it
// left; Start starts its writer. A Store of an earlier life must be closed
// (after a Crash, or an injected failure) before the next is opened.
func OpenMem(disk *MemDisk, opts MemOptions) *Store {
	opts.Logger = logger.OrDiscard(opts.Logger)
	disk.mu.Lock()
	e := &memEngine{disk: disk, gen: disk.gen, tree: disk.synced}
	disk.mu.Unlock()
	return newStore(e, opts.Logger, opts.MaxBatch, opts.KeyInflight)
}

// memEngine keeps the store on a MemDisk. A group is durable once synced
// (durable writes it, waits out the sync delay, then acknowledges it),
// and applied as it becomes durable, as etcd's is.
type memEngine struct {
	disk *MemDisk
	gen  uint64 // the life this engine belongs to
	// tree is the disk's synced tree of that life: written while the life
	// lasts, read (never written) after a crash ended it.
	tree *btree.BTreeG[memItem]
	s    *Store
}

func (e *memEngine) attach(s *Store) { e.s = s }

// limits: what a Badger store of the default options takes, roughly.
func (e *memEngine) limits() (int64, int64, int64) {
	return 1 << 16, 64 << 20, valueThreshold - 1
}

func (e *memEngine) applyEvery() time.Duration { return 0 }
func (e *memEngine) reopen() error             { return nil }
func (e *memEngine) start(<-chan struct{})     {}
func (e *memEngine) close(bool) error          { return nil }
func (e *memEngine) apply([]*inflight) error   { return nil }

// durable writes the group (unsynced), waits for its sync and then
// acknowledges it, all of it or nothing: a crash meanwhile decides what
// of it survives, and the group fails.
func (e *memEngine) durable(group []*inflight) error {
	d := e.disk
	d.mu.Lock()
	if d.gen != e.gen {
		d.mu.Unlock()
		return errCrashed
	}
	if err := d.failNext; err != nil {
		d.failNext = nil
		d.mu.Unlock()
		return err
	}
	var keys, bytes int64
	d.unsynced = d.unsynced[:0]
	for _, f := range group {
		if f.over.len() > 0 {
			d.unsynced = append(d.unsynced, f.over)
			keys += int64(f.over.len())
			bytes += f.over.bytes()
		}
	}
	delay := d.syncDelay
	d.mu.Unlock()
	start := time.Now()
	if delay > 0 {
		time.Sleep(delay)
	}
	d.mu.Lock()
	if d.gen != e.gen {
		d.mu.Unlock()
		return errCrashed
	}
	for _, o := range d.unsynced {
		writeOverlay(e.tree, o)
	}
	d.unsynced = nil
	d.groups++
	d.mu.Unlock()
	for _, f := range group {
		f.done.Store(true)
	}
	st := &e.s.stats
	st.Batches.Add(1)
	st.Syncs.Add(1)
	st.SyncNanos.Add(time.Since(start).Nanoseconds())
	st.Keys.Add(keys)
	st.Bytes.Add(bytes)
	return nil
}

// reader reads a copy of the committed state as it is now (a tree's clone
// is copy-on-write, so taking one is cheap).
func (e *memEngine) reader() reader {
	d := e.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	return &memReader{t: e.tree.Clone()}
}

func (e *memEngine) snapshotReader() (reader, error) { return e.reader(), nil }
