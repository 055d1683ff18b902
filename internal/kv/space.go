package kv

// The disk guard: Badger writes its memtables and tables through memory-mapped
// files, and a page of such a file that the filesystem cannot find room for
// is not an error Badger sees but a SIGBUS that kills the process. So the
// store never lets its own writes take the disk that far: it looks at the
// free space of the data directory's filesystem after every group it makes
// durable and every spaceCheckEvery, and below a reserve it refuses writes
// before they reach the writer (doc.go, "A disk that fills").
//
//	ok     free >= reserve                       every write taken
//	low    reserve/2 <= free < reserve           writes refused (fault.DiskFull);
//	                                             renewals and the reaper's expiries taken
//	out    free < reserve/2, or Badger's next    every write refused
//	       memtable could not be preallocated
//
// The state follows the free space both ways: freeing space on the disk
// takes the store back to ok at the next look, without a restart (a state
// is left upwards once free passes its line by reserve/8).

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-run/tether/internal/fault"
)

// DefaultDiskReserve is the free space below which the store refuses writes.
// Below it Badger may still have to write what the store already took:
// the rest of its memtable and the next one (preallocated, memtables.go),
// both flushed into level-0 tables (up to 2 x 64 MiB), the log's next
// segment (64 MiB), and a compaction's new tables, written before the old
// ones go. Half of it is kept from renewals too.
const DefaultDiskReserve = 512 << 20

// spaceCheckEvery is how often the guard looks at the free space while no
// group is made durable (a full store makes none): how soon a store takes
// writes again once space is freed.
const spaceCheckEvery = 250 * time.Millisecond

// Space states, as the metric tether_store_disk_full shows them.
const (
	spaceOK  = 0
	spaceLow = 1 // writes refused; renewals and expiries taken
	spaceOut = 2 // every write refused
)

// diskSpace is the guard of one data directory.
type diskSpace struct {
	dir     string
	reserve int64
	log     *slog.Logger
	stats   *Stats

	state atomic.Int32
	// unprepared is set while Badger's next memtable file could not be
	// preallocated (memtables.go): Badger would write it unallocated, so
	// no write is taken until it is.
	unprepared atomic.Bool

	mu sync.Mutex // one look at a time: each logs its own transition
}

func newDiskSpace(dir string, reserve int64, log *slog.Logger, stats *Stats) *diskSpace {
	return &diskSpace{dir: dir, reserve: orDefaultReserve(reserve), log: log, stats: stats}
}

func orDefaultReserve(reserve int64) int64 {
	if reserve <= 0 {
		return DefaultDiskReserve
	}
	return reserve
}

// roomToOpen refuses to open the store in dir with less than half the
// reserve free: opening replays the log into a memtable file Badger has
// just made (sparse, not yet allocated) and flushes it into tables, all
// through memory-mapped files, where a full disk is a SIGBUS at every
// start. A dir not made yet is measured at its nearest parent.
func roomToOpen(dir string, reserve int64) error {
	need := orDefaultReserve(reserve) / 2
	for d := dir; ; d = filepath.Dir(d) {
		free, err := freeBytes(d)
		if err == nil {
			if free < need {
				return fmt.Errorf("the disk that holds %s has %d MiB free, and opening the store needs %d MiB: free space on that filesystem (or grow it) and start again", dir, free>>20, need>>20)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			return nil // nothing to measure: Badger says what is wrong
		}
	}
}

// freeBytes is the space an unprivileged process may still take on the
// filesystem that holds dir.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("error reading the free space of %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// look reads the free space and moves the state to what it calls for,
// logging a change. An error reading it leaves the state as it was.
func (d *diskSpace) look() {
	free, err := freeBytes(d.dir)
	if err != nil {
		d.log.Warn("error looking at the data directory's free space", "err", err)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.DiskFree.Store(free)
	// A state is left upwards only with a margin to spare, so that a disk
	// hovering at a line (a flush's table made, then its memtable file
	// removed) does not take the store in and out of it.
	was := d.state.Load()
	margin := d.reserve / 8
	next := int32(spaceOK)
	switch {
	case free < d.reserve/2 || (was == spaceOut && free < d.reserve/2+margin) || d.unprepared.Load():
		next = spaceOut
	case free < d.reserve || (was != spaceOK && free < d.reserve+margin):
		next = spaceLow
	}
	d.state.Store(next)
	d.stats.DiskFull.Store(int64(next))
	if was == next {
		return
	}
	mib := func(n int64) int64 { return n >> 20 }
	switch {
	case next == spaceOK:
		d.log.Info("the data directory's disk has room again: the store takes writes again",
			"dir", d.dir, "free_mib", mib(free), "reserve_mib", mib(d.reserve))
	case was == spaceOK:
		d.log.Error("the data directory's disk is full: the store refuses writes (503 disk_full) to keep Badger from crashing the server; "+
			"free space on that filesystem (or grow it) and writes resume by themselves, no restart needed",
			"dir", d.dir, "free_mib", mib(free), "reserve_mib", mib(d.reserve), "renewals_refused", next == spaceOut)
	case next == spaceOut:
		d.log.Error("the data directory's disk is fuller still: lease renewals and expiries are refused too, and leases will lapse; free space on that filesystem now",
			"dir", d.dir, "free_mib", mib(free), "reserve_mib", mib(d.reserve), "memtable_unprepared", d.unprepared.Load())
	default:
		d.log.Warn("the data directory's disk has a little room again: lease renewals are taken, other writes are still refused",
			"dir", d.dir, "free_mib", mib(free), "reserve_mib", mib(d.reserve))
	}
}

// refuse is the fault a write gets in the present state (nil: taken),
// counted as a refusal. light is a renewal or an expiry, which may use the
// upper half of the reserve.
func (d *diskSpace) refuse(light bool) error {
	err := d.err(light)
	if err != nil {
		d.stats.Refused.Add(1)
	}
	return err
}

// err is the fault a write gets in the present state (nil: taken).
func (d *diskSpace) err(light bool) error {
	switch d.state.Load() {
	case spaceOK:
		return nil
	case spaceLow:
		if light {
			return nil
		}
		return &fault.DiskFull{}
	default:
		return &fault.DiskFull{Renewal: true}
	}
}

// watch looks at the free space every spaceCheckEvery until done, and has
// prepare (Badger's next memtable) tried again while it failed.
func (d *diskSpace) watch(done <-chan struct{}, prepare func()) {
	t := time.NewTicker(spaceCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if d.unprepared.Load() {
				prepare()
			}
			d.look()
		}
	}
}
