package kv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/testskip"
)

// smallDisk mounts a tmpfs of sizeMiB at a new directory and returns it; it
// is unmounted when the test ends, failed or not. On tmpfs a write through
// a memory-mapped page the filesystem has no room for is a SIGBUS, as it is
// on a full ext4 for a sparse file.
func smallDisk(t *testing.T, sizeMiB int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testskip.Missing(t, "root", "mounting a size-limited tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.Mkdir(dir, 0o700))
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%dm", sizeMiB)); err != nil {
		testskip.Missing(t, "tmpfs", "mount: "+err.Error())
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("error unmounting the test's tmpfs at %s: %v", dir, err)
		}
	})
	return dir
}

// spareSettled waits until the log's spare segment, which it zero-fills in
// the background, takes all its room: until then the free space shrinks.
func spareSettled(t *testing.T, dir string) {
	t.Helper()
	spare := spareName(filepath.Join(dir, "wal"))
	require.Eventually(t, func() bool {
		info, err := os.Stat(spare)
		return err == nil && info.Sys().(*syscall.Stat_t).Blocks*512 >= walSegmentSize
	}, 30*time.Second, 10*time.Millisecond, "the log's spare segment is filled")
}

// fill makes a file at path that leaves leave bytes free on dir's
// filesystem (at most a page more). The store may take space meanwhile
// (Badger's writes): a fill that finds less room than it read is tried
// again.
func fill(t *testing.T, dir, path string, leave int64) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	for try := 0; ; try++ {
		free, err := freeBytes(dir)
		require.NoError(t, err)
		require.Greater(t, free, leave, "the disk has less room than the test leaves")
		info, err := f.Stat()
		require.NoError(t, err)
		err = syscall.Fallocate(int(f.Fd()), 0, 0, info.Size()+free-leave)
		if errors.Is(err, syscall.ENOSPC) && try < 10 {
			continue
		}
		require.NoError(t, err)
		break
	}
	got, err := freeBytes(dir)
	require.NoError(t, err)
	require.InDelta(t, leave, got, 1<<16)
}

// allocated is the number of bytes of the file at path that have blocks.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return info.Sys().(*syscall.Stat_t).Blocks * 512
}

// newestMemtable is the number of Badger's newest non-empty memtable file
// (0: none).
func newestMemtable(dir string) int {
	entries, _ := os.ReadDir(dir)
	newest := 0
	for _, e := range entries {
		var fid int
		if _, err := fmt.Sscanf(e.Name(), "%05d.mem", &fid); err != nil || fid <= newest {
			continue
		}
		if info, err := e.Info(); err == nil && info.Size() > 0 {
			newest = fid
		}
	}
	return newest
}

// TestMemtablesPrepared pins how the store keeps Badger's memtable writes
// off unallocated pages: the memtable Badger writes and the next one are
// allocated, across a rotation; and on a disk with no byte left, Badger
// still takes writes into its memtable instead of dying of SIGBUS.
func TestMemtablesPrepared(t *testing.T) {
	dir := smallDisk(t, 640)
	s := open(t, dir, Options{DiskReserve: 32 << 20})
	e := s.eng.(*badgerEngine)
	size := e.mem.size

	cur := newestMemtable(dir)
	require.NotZero(t, cur)
	require.GreaterOrEqual(t, allocated(t, memtablePath(dir, cur)), size, "the memtable Badger writes is allocated")
	require.GreaterOrEqual(t, allocated(t, memtablePath(dir, cur+1)), size, "the next memtable is prepared")

	// Past one memtable (64 MiB) of writes, Badger has rotated into the
	// prepared file, and the one after it is prepared in turn.
	ctx := context.Background()
	val := make([]byte, 512<<10)
	for i := range 160 {
		require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set(fmt.Appendf(nil, "big%04d", i), val) }))
	}
	// The applier writes Badger behind the log.
	require.Eventually(t, func() bool { return newestMemtable(dir) > cur }, 30*time.Second, 10*time.Millisecond, "Badger rotated its memtable")
	cur = newestMemtable(dir)
	require.GreaterOrEqual(t, allocated(t, memtablePath(dir, cur)), size, "Badger took the prepared file, allocated")
	// Prepared by the applier right after the commit that rotated.
	require.Eventually(t, func() bool {
		info, err := os.Stat(memtablePath(dir, cur+1))
		return err == nil && info.Sys().(*syscall.Stat_t).Blocks*512 >= size
	}, 10*time.Second, 10*time.Millisecond, "the next memtable is prepared")
	spareSettled(t, dir)

	// No byte left: writes straight into Badger (past our guard) land in
	// the allocated memtable. Before, the first one that touched a new
	// page killed the process.
	fill(t, dir, filepath.Join(dir, "filler"), 0)
	for i := range 40 {
		txn := e.db.NewTransaction(true)
		require.NoError(t, txn.Set(fmt.Appendf(nil, "raw%04d", i), val))
		require.NoError(t, txn.Commit())
	}
	require.NoError(t, os.Remove(filepath.Join(dir, "filler")))
	require.NoError(t, s.Close())
}

// TestDiskFullRefusesWritesAndRecovers fills the data directory's disk in
// steps: below the reserve writes are refused and renewals (eager writes)
// taken, below half of it both are refused, reads are served throughout,
// and once space is freed writes are taken again, without a reopen;
// nothing refused was kept, nothing taken was lost.
func TestDiskFullRefusesWritesAndRecovers(t *testing.T) {
	dir := smallDisk(t, 400)
	const reserve = 64 << 20
	s := open(t, dir, Options{DiskReserve: reserve})
	ctx := context.Background()
	set := func(key string) func(*Txn) error {
		return func(tx *Txn) error { return tx.Set([]byte(key), []byte("v")) }
	}
	require.NoError(t, s.Update(ctx, set("before")))
	require.NoError(t, s.Full())
	spareSettled(t, dir)

	fill(t, dir, filepath.Join(dir, "filler1"), reserve*3/4)
	s.space.look()
	var full *fault.DiskFull
	require.ErrorAs(t, s.Full(), &full)
	require.False(t, full.Renewal)
	require.ErrorAs(t, s.Update(ctx, set("refused")), &full)
	require.NoError(t, s.UpdateEager(ctx, set("renewed")), "renewals use the upper half of the reserve")
	require.NoError(t, s.UpdateUrgent(ctx, set("expired")), "so do expiries")
	require.Equal(t, int64(spaceLow), s.Stats().DiskFull.Load())

	fill(t, dir, filepath.Join(dir, "filler2"), reserve/4)
	s.space.look()
	require.ErrorAs(t, s.UpdateEager(ctx, set("refused-renewal")), &full)
	require.True(t, full.Renewal)
	require.Equal(t, int64(spaceOut), s.Stats().DiskFull.Load())
	require.Equal(t, int64(2), s.Stats().Refused.Load())
	for _, key := range []string{"before", "renewed", "expired"} {
		_, ok := get(t, s, key)
		require.True(t, ok, "%s is read while the disk is full", key)
	}

	require.NoError(t, os.Remove(filepath.Join(dir, "filler2")))
	require.NoError(t, os.Remove(filepath.Join(dir, "filler1")))
	s.space.look()
	require.NoError(t, s.Full())
	require.NoError(t, s.Update(ctx, set("after")))
	require.NoError(t, s.Close())

	// A disk with less than half the reserve free is not opened: the
	// open's replay would write Badger's memtable before it is allocated.
	fill(t, dir, filepath.Join(dir, "filler3"), reserve/4)
	_, err := Open(Options{Dir: dir, DiskReserve: reserve})
	require.ErrorContains(t, err, "free space on that filesystem")
	require.NoError(t, os.Remove(filepath.Join(dir, "filler3")))

	s = open(t, dir, Options{DiskReserve: reserve})
	defer s.Close()
	for key, want := range map[string]bool{"before": true, "renewed": true, "expired": true, "after": true, "refused": false, "refused-renewal": false} {
		_, ok := get(t, s, key)
		require.Equal(t, want, ok, key)
	}
}
