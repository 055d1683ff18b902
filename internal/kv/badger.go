package kv

// Engine 1: Badger holds the data, the write-ahead log of our own (wal.go)
// makes a group durable with one fdatasync, and the applier writes durable
// segments into Badger behind it.

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

type badgerEngine struct {
	db  *badger.DB
	dir string // Badger's directory ("" in memory)
	wal *wal   // nil in memory
	// flushed is the seq up to which Badger's tables hold every log record
	// (flushed.go): the log may drop those. Set by the applier, read by the
	// logger.
	flushed atomic.Uint64
	// unflushed are the applier's commits whose memtables Badger may not
	// have flushed yet, oldest first, one per look at the tables; newest is
	// the newest record committed since the last look (0: none), checked
	// when that look was. Applier only.
	unflushed []commitAt
	newest    uint64
	checked   time.Time
	s         *Store
	log       *slog.Logger
	opts      badger.Options // what it was opened with (reopen)
	// mem prepares Badger's memtable files (memtables.go); nil in memory.
	mem     *memtableFiles
	reserve int64 // the free space below which writes are refused (space.go)
	// replayed says the log's records were applied to Badger at open and
	// are not yet flushed into its tables: the next reopen flushes them
	// and drops the segments they came from (Options.Reopens).
	replayed bool
}

// openBadger opens (or creates) Badger in opts.Dir and applies what its log
// holds.
func openBadger(opts Options) (*badgerEngine, error) {
	bopts := badger.DefaultOptions(opts.Dir).
		WithLogger(nil).
		// Acknowledged writes are durable in our own log (wal.go), so
		// Badger's commits need not be: the log keeps every record until
		// Badger has flushed it into a table, which Badger syncs
		// (flushed.go). Syncing each commit (an msync of the memtable's
		// log, a journal commit of its own) cost ~15 % of (a)'s pairs/s:
		// it stalled the log's fdatasync behind it.
		WithSyncWrites(false).
		// Every value stays in the LSM tree (limits refuses a larger one):
		// Badger's value log, unsynced, could lose a value a flushed table
		// points to.
		WithValueThreshold(valueThreshold).
		WithNumVersionsToKeep(1).
		// One goroutine (the applier) writes Badger, so its transactions
		// never conflict: without conflict detection a commit no longer
		// hashes every key into a set that Badger keeps until no older
		// read is open. A/B, 8 s windows: (b) 87-97 -> 84-92 µs of server
		// CPU per job; (a) within this machine's noise.
		WithDetectConflicts(false).
		WithCompactL0OnClose(false).
		// Memory: Badger's defaults (five 64 MiB memtables, a 256 MiB block
		// cache, four compactors) let a busy store pass 2 GiB. Live nodes are
		// served from the graph's memory, so the caches can be small. The
		// memtables trade memory for compaction, which is a third of the
		// server's CPU under batched claims: scenario (b) did 8.4k jobs/s
		// with 8 MiB memtables, 10.0k with 32 MiB, 11.7k with 64 MiB.
		// Two of 64 MiB (one filling, one flushing) hold 32 MiB more than
		// three of 32; with level 0 taking 8 tables before it is compacted
		// (Badger: 5) and stalling writes at 24 (15), (b) used 87-91 µs of
		// server CPU per job instead of 97-99 (A/B, two 15 s runs each).
		WithMemTableSize(64 << 20).
		WithNumMemtables(2).
		WithNumLevelZeroTables(8).
		WithNumLevelZeroTablesStall(24).
		WithBlockCacheSize(32 << 20).
		WithIndexCacheSize(16 << 20).
		WithNumCompactors(2).
		// Values are small binary records; compressing tables cost 8 % of
		// the server's CPU in compactions for little space.
		WithCompression(options.None)
	if opts.InMemory {
		bopts = bopts.WithInMemory(true).WithDir("").WithValueDir("")
	} else if err := roomToOpen(opts.Dir, opts.DiskReserve); err != nil {
		return nil, err
	} else if err := removeCrashLeftovers(opts.Dir, opts.Logger); err != nil {
		return nil, err
	}
	db, err := openBadgerDB(bopts)
	if err != nil {
		return nil, err
	}
	e := &badgerEngine{db: db, log: opts.Logger, opts: bopts, reserve: opts.DiskReserve}
	if !opts.InMemory {
		e.dir = opts.Dir
		walDir := filepath.Join(opts.Dir, "wal")
		if e.db, e.wal, e.replayed, err = recoverLog(db, bopts, walDir, !opts.Reopens); err != nil {
			return nil, err
		}
		e.mem = newMemtableFiles(opts.Dir, bopts.MemTableSize, e.db.MaxBatchSize())
	}
	return e, nil
}

// reopen closes Badger and opens it again, before the writer starts. A scan
// of every record (the graph's rebuild) leaves every page of Badger's tables
// mapped into the process, counted in its resident memory though the
// records now live in the graph's memory; reopening maps the tables afresh,
// and only what is read from now on comes back. The pages stay in the page
// cache, so nothing is read twice.
func (e *badgerEngine) reopen() error {
	if e.dir == "" {
		return nil
	}
	err := e.db.Close()
	e.db = nil // closed, or failed to close: either way not to be used again
	if err != nil {
		return fmt.Errorf("error closing badger to reopen it: %w", err)
	}
	if err := e.mem.drop(); err != nil {
		return fmt.Errorf("error removing the prepared memtable file: %w", err)
	}
	db, err := openBadgerDB(e.opts)
	if err != nil {
		return err
	}
	e.db = db
	e.openMemtables()
	return e.dropReplayed()
}

// dropReplayed removes the log segments replayed at open, once a reopen
// has flushed their records into Badger's tables. Nothing has been
// appended since (the writer has not started), so every segment before
// the log's next seq goes.
func (e *badgerEngine) dropReplayed() error {
	if !e.replayed {
		return nil
	}
	if err := e.wal.removeApplied(e.wal.next - 1); err != nil {
		return fmt.Errorf("error removing the replayed log: %w", err)
	}
	e.replayed = false
	return nil
}

// openBadgerDB opens Badger and syncs it once. Its commits are not synced,
// and Badger makes the files it opens with (the first memtable's log and a
// value log) without syncing them; a crash could leave one with no length,
// which Badger refuses to open ("Create a new file"). Its public Sync makes
// both durable. No sync closes the instant between Badger creating such a
// file and sizing it, where a kill -9 leaves it empty: the next open
// removes it (removeCrashLeftovers).
func openBadgerDB(opts badger.Options) (*badger.DB, error) {
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("error opening badger in %s: %w", opts.Dir, err)
	}
	if err := db.Sync(); err != nil {
		db.Close()
		return nil, fmt.Errorf("error syncing badger in %s: %w", opts.Dir, err)
	}
	return db, nil
}

// valueThreshold is Badger's largest (its default): a value of this size
// or more would go to its value log.
const valueThreshold = 1 << 20

// attach gives the engine its Store and, on disk, the store its guard of
// the data directory's free space (space.go), which looks once now.
func (e *badgerEngine) attach(s *Store) {
	e.s = s
	if e.mem == nil {
		return
	}
	s.space = newDiskSpace(e.dir, e.reserve, e.log, &s.stats)
	e.openMemtables()
	s.space.look()
}

// openMemtables allocates the memtable file Badger has just opened and
// prepares the next (memtables.go); while it cannot, the guard refuses
// every write.
func (e *badgerEngine) openMemtables() {
	e.noteMemtables(e.mem.open())
}

// prepareMemtable prepares the file of Badger's next memtable once Badger
// has taken the last one prepared.
func (e *badgerEngine) prepareMemtable() {
	e.noteMemtables(e.mem.prepare())
}

// noteMemtables tells the guard whether the next memtable's file is ready.
func (e *badgerEngine) noteMemtables(err error) {
	sp := e.s.space
	if sp.unprepared.Swap(err != nil) == (err != nil) {
		return
	}
	if err != nil {
		e.log.Warn("error preallocating badger's next memtable file: every write is refused until it is", "dir", e.dir, "err", err)
	}
	sp.look()
}

func (e *badgerEngine) limits() (int64, int64, int64) {
	return e.db.MaxBatchCount() * 8 / 10, e.db.MaxBatchSize() * 8 / 10, valueThreshold - 1
}

// reader opens a Badger snapshot. Badger makes it wait for every commit
// already handed over, so it holds everything not in flight (and,
// harmlessly, some of what is).
func (e *badgerEngine) reader() reader {
	return badgerReader{e.db.NewTransaction(false)}
}

func (e *badgerEngine) snapshotReader() (reader, error) { return e.reader(), nil }

func (e *badgerEngine) start(done <-chan struct{}) {
	if e.dir != "" {
		go e.syncDirLoop(done)
		go e.s.space.watch(done, e.prepareMemtable)
	}
}

func (e *badgerEngine) applyEvery() time.Duration {
	if e.wal == nil {
		return 0
	}
	// Readers see what is durable in the log anyway: commit at most every
	// applyEvery, gathering everything logged meanwhile.
	return applyEvery
}

// applyEvery is the least time between two of the applier's Badger commits.
const applyEvery = 5 * time.Millisecond

// durable appends a record per segment of the group to the log and syncs
// them once. Without a log (in memory) it writes the group into Badger
// instead.
func (e *badgerEngine) durable(group []*inflight) error {
	if e.wal == nil {
		return e.commitGroup(group)
	}
	var keys, bytes int64
	for _, f := range group {
		if f.over.len() == 0 {
			continue
		}
		f.seq = e.wal.add(f.over)
		if len(e.wal.buf) > walSegmentSize/4 {
			// A group this large is written in parts, so that no write is
			// larger than a segment.
			if err := e.wal.flush(); err != nil {
				return fmt.Errorf("error writing the log: %w", err)
			}
		}
		keys += int64(f.over.len())
		bytes += f.over.bytes()
	}
	start := time.Now()
	if err := e.wal.flush(); err != nil {
		return fmt.Errorf("error writing the log: %w", err)
	}
	st := &e.s.stats
	st.Syncs.Add(1)
	st.SyncNanos.Add(time.Since(start).Nanoseconds())
	st.Keys.Add(keys)
	st.Bytes.Add(bytes)
	e.s.space.look()
	if err := e.wal.removeApplied(e.flushed.Load()); err != nil {
		e.log.Warn("error removing applied log segments", "err", err)
	}
	return nil
}

// apply writes durable segments into Badger (in memory, durable did), and
// moves the flushed mark on when Badger has flushed earlier commits.
func (e *badgerEngine) apply(group []*inflight) error {
	if e.wal == nil {
		return nil
	}
	if err := e.commitGroup(group); err != nil {
		return err
	}
	e.noteCommitted(group)
	return nil
}

// commitGroup writes segments into Badger, as few commits as Badger's limits
// allow (commit splits a run that does not fit), and marks them done. Badger
// need not take a segment atomically: until all of it is in, readers and the
// writer see it in the log's segments, and a crash replays it from the log.
func (e *badgerEngine) commitGroup(group []*inflight) error {
	maxCount, maxSize := e.db.MaxBatchCount()*8/10, e.db.MaxBatchSize()*8/10
	for i := 0; i < len(group); {
		j, count, size := i, int64(0), int64(0)
		for j < len(group) && (j == i || (count+int64(group[j].over.len()) <= maxCount && size+group[j].over.size <= maxSize)) {
			count += int64(group[j].over.len())
			size += group[j].over.size
			j++
		}
		if err := e.commit(group[i:j]); err != nil {
			return err
		}
		for _, f := range group[i:j] {
			f.done.Store(true)
		}
		i = j
	}
	return nil
}

// commit writes segments as one Badger transaction (not synced: the log
// holds them until Badger has flushed them, flushed.go).
func (e *badgerEngine) commit(segs []*inflight) error {
	if e.s.broken.Load() {
		return errBroken
	}
	txn := e.db.NewTransaction(true)
	defer func() { txn.Discard() }()
	// The segments are staged in order, without merging them first: a key
	// written by several takes the last one's value (Badger keeps one
	// pending write per key).
	for _, f := range segs {
		for k, v := range f.over.vals {
			en := walEntry{key: []byte(k), val: v.val, deleted: v.deleted, expiresAt: v.expiresAt}
			err := en.stage(txn)
			if err == badger.ErrTxnTooBig {
				// More than one Badger transaction holds: commit what is
				// staged and go on. Nothing reads Badger's half-way state:
				// readers and the writer see these writes in the log's
				// segments until all are in, and a crash in between replays
				// the whole log record.
				if err = txn.Commit(); err != nil {
					return fmt.Errorf("error committing: %w", err)
				}
				e.s.stats.Batches.Add(1)
				txn = e.db.NewTransaction(true)
				err = en.stage(txn)
			}
			if err != nil {
				return fmt.Errorf("error staging a commit: %w", err)
			}
		}
	}
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("error committing: %w", err)
	}
	e.s.stats.Batches.Add(1)
	if e.mem != nil {
		// One commit is far smaller than a memtable: Badger rotates at
		// most once in it, into the file prepared before.
		e.prepareMemtable()
	}
	return nil
}

func (e *badgerEngine) close(healthy bool) error {
	if e.db == nil {
		// A failed reopen left no Badger open; what it held is in its
		// files (it was closed, or failed to close and is not trusted).
		if e.wal != nil {
			return e.wal.close()
		}
		return nil
	}
	// Closing Badger flushes its memtables into synced tables.
	err := e.db.Close()
	if e.mem != nil {
		err = errors.Join(err, e.mem.drop())
	}
	if e.wal != nil {
		err = errors.Join(err, e.wal.close())
		if healthy && err == nil {
			// Everything is in Badger's tables: the log has nothing left
			// to give.
			err = e.wal.removeAll()
		}
	}
	return err
}
