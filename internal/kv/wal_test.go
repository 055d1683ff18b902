package kv

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
)

func overlayOf(kvs ...string) *overlay {
	o := newOverlay()
	for i := 0; i+1 < len(kvs); i += 2 {
		if kvs[i+1] == "-" {
			o.put(kvs[i], value{deleted: true})
		} else {
			o.put(kvs[i], value{val: []byte(kvs[i+1])})
		}
	}
	return o
}

// TestRecoveryAppliesTheLogAndStopsAtATornRecord: records that reached the
// log but not Badger are applied at open, in order; a torn last record (a
// write the crash cut) and anything after it are not.
func TestRecoveryAppliesTheLogAndStopsAtATornRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A store that has "a" in Badger.
	s := open(t, dir, Options{})
	require.NoError(t, s.Update(t.Context(), func(tx *Txn) error { return tx.Set([]byte("a"), []byte("0")) }))
	require.NoError(t, s.Close())

	// Then a log with three records, as a crash leaves it: applied to
	// nothing, the third torn.
	w, err := openWAL(filepath.Join(dir, "wal"), 100)
	require.NoError(t, err)
	w.add(overlayOf("a", "1", "b", "1"))
	require.NoError(t, w.flush())
	w.add(overlayOf("a", "2", "b", "-", "c", "2"))
	require.NoError(t, w.flush())
	off := w.off
	w.add(overlayOf("c", "3"))
	require.NoError(t, w.flush())
	require.NoError(t, w.close())
	seg := segmentName(filepath.Join(dir, "wal"), 100)
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0xff}, off+walHeader+3) // corrupt the third record
	require.NoError(t, err)
	require.NoError(t, f.Close())

	recs, next, err := readWAL(filepath.Join(dir, "wal"))
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.EqualValues(t, 102, next)

	s = open(t, dir, Options{})
	defer s.Close()
	for k, want := range map[string]string{"a": "2", "c": "2"} {
		v, ok := get(t, s, k)
		require.True(t, ok, k)
		require.Equal(t, want, v, k)
	}
	_, ok := get(t, s, "b")
	require.False(t, ok, "b was deleted by the second record")
	segs, err := listSegments(filepath.Join(dir, "wal"))
	require.NoError(t, err)
	require.Equal(t, []uint64{102}, segs, "applied segments are gone; the new one starts after the last intact record")
}

// TestLogSegmentsRollAndAreRemovedOnceFlushed: a busy log moves to new
// segments and drops those whose records Badger's tables hold; a clean
// close leaves no log at all (Badger's Close flushes its memtables).
//
// Not parallel: it waits on Badger's background flush of 150 MiB, which the
// package's other large writers would slow for as long as they run.
func TestLogSegmentsRollAndAreRemovedOnceFlushed(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{})
	big := make([]byte, 256<<10)
	for i := range 600 { // 150 MiB: three segments
		require.NoError(t, s.Update(t.Context(), func(tx *Txn) error {
			return tx.Set([]byte{byte(i >> 8), byte(i)}, big)
		}))
	}
	// One more write runs the removal after the applier caught up. The
	// writes are large: Badger rotates a memtable only when a write finds
	// it full, so small ones could leave the one holding the end of the
	// first segment unflushed for good. The wait is long because a loaded
	// machine flushes slowly; a failure says where the log and Badger's
	// tables stood.
	e := s.eng.(*badgerEngine)
	var segs []uint64
	deadline := time.Now().Add(90 * time.Second)
	for {
		require.NoError(t, s.Update(t.Context(), func(tx *Txn) error { return tx.Set([]byte("x"), big) }))
		var err error
		segs, err = listSegments(filepath.Join(dir, "wal"))
		require.NoError(t, err)
		if len(segs) > 0 && segs[0] > 1 { // the first segment went
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first segment is still there once Badger could have flushed it: segments %v, flushed mark %d, tables' top version %d, tables %d",
				segs, e.flushed.Load(), e.flushedVersion(), len(e.db.Tables()))
		}
		time.Sleep(10 * time.Millisecond) // Badger's flush has no signal to wait on
	}
	require.NoError(t, s.Close())
	segs, err := listSegments(filepath.Join(dir, "wal"))
	require.NoError(t, err)
	require.Empty(t, segs, "a clean close leaves no log")
	s = open(t, dir, Options{})
	defer s.Close()
	v, ok := get(t, s, string([]byte{2, 87}))
	require.True(t, ok)
	require.Len(t, v, 256<<10)
}

// TestTheLogKeepsWhatBadgerHasNotFlushed: Badger's commits are not synced,
// so the log may drop a record only once a table Badger flushed holds it.
// Writes that fit one memtable leave the flushed mark at zero however long
// they have been applied; a memtable's worth more moves it past them, never
// past what is still in a memtable.
//
// Not parallel, and its wait is long: it waits on Badger's background flush
// of a memtable, which the package's other large writers slow down.
func TestTheLogKeepsWhatBadgerHasNotFlushed(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{})
	defer s.Close()
	e := s.eng.(*badgerEngine)
	ctx := t.Context()
	for i := range 20 {
		require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte{'a', byte(i)}, []byte("v")) }))
	}
	// Applied over and over for three of the applier's looks at the tables:
	// still nothing is in one.
	require.Never(t, func() bool {
		require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("b"), nil) }))
		return e.flushed.Load() != 0
	}, 3*flushCheckEvery, flushCheckEvery/10, "nothing is in a table yet")

	big := make([]byte, 256<<10)
	for i := range 320 { // 80 MiB: more than one 64 MiB memtable
		require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte{'c', byte(i >> 8), byte(i)}, big) }))
	}
	last := e.wal.next - 1
	require.Eventually(t, func() bool {
		require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("b"), nil) }))
		return e.flushed.Load() > 20
	}, 90*time.Second, 10*time.Millisecond, "the first memtable was flushed")
	require.Less(t, e.flushed.Load(), last, "the last writes are still in a memtable")
}

// TestBadgerRefusesAValueItWouldPutInItsValueLog: every value stays in the
// LSM tree, so one of Badger's value threshold is refused as invalid.
func TestBadgerRefusesAValueItWouldPutInItsValueLog(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), Options{})
	defer s.Close()
	ctx := t.Context()
	err := s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("k"), make([]byte, valueThreshold)) })
	var inv *fault.Invalid
	require.ErrorAs(t, err, &inv)
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("k"), make([]byte, valueThreshold-1)) }))
	require.True(t, s.Healthy())
}

// TestARecycledSegmentsOldRecordsAreNeverReadBack: a segment the log dropped
// becomes the next one without being rewritten, so its old records lie past
// the new ones. Records of one size make the danger plain: right after the
// new segment's last record sits an old record, intact, and had the log
// handed out its seq again (it would start from 1 when a clean close left
// no segment), it would be read back as the next record. The log starts
// past every seq the recycled file held, so only the new records are read,
// after a crash and after a clean close.
func TestARecycledSegmentsOldRecordsAreNeverReadBack(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	val := string(make([]byte, 1<<20))
	// fill writes records until the log rolls onto a new segment; the
	// record that rolled it is the new segment's first.
	fill := func(w *wal) uint64 {
		cur := w.segments[len(w.segments)-1]
		for w.segments[len(w.segments)-1] == cur {
			w.add(overlayOf("k", val))
			require.NoError(t, w.flush())
		}
		return w.segments[len(w.segments)-1]
	}

	// A clean close after the first segment (seqs from 1) was dropped.
	w, err := openWAL(dir, 1)
	require.NoError(t, err)
	second := fill(w)
	require.NoError(t, w.removeApplied(second-1))
	require.Equal(t, recycledName(dir, second-1), w.recycled, "the dropped segment is kept")
	require.NoError(t, w.removeAll())
	require.NoError(t, w.close())
	_, next, err := readWAL(dir)
	require.NoError(t, err)
	require.EqualValues(t, 1, next, "no segment is left")
	w, err = openWAL(dir, next)
	require.NoError(t, err)
	require.Equal(t, second, w.next, "no seq the recycled file held is issued again")
	require.NoFileExists(t, recycledName(dir, second-1), "the new segment is the recycled first")
	w.add(overlayOf("k", val))
	require.NoError(t, w.flush())
	require.NoError(t, w.close())
	recs, next, err := readWAL(dir)
	require.NoError(t, err)
	require.Equal(t, 1, len(recs), "the old records after the new one are not read")
	require.Equal(t, second, recs[0].seq)

	// The log rolls onto a recycled segment again; a crash after two
	// records.
	w, err = openWAL(dir, next)
	require.NoError(t, err)
	third := fill(w)
	require.NoError(t, w.removeApplied(third-1))
	require.NotEmpty(t, w.recycled)
	fourth := fill(w)
	require.Empty(t, w.recycled, "the fourth segment is the recycled third")
	w.add(overlayOf("k", val))
	require.NoError(t, w.flush())
	w.add(overlayOf("k", val))
	require.NoError(t, w.flush())
	require.NoError(t, w.close())
	recs, next, err = readWAL(dir)
	require.NoError(t, err)
	require.Equal(t, fourth+3, next, "the records end with the last written (the one that rolled the log and two more)")
	require.Equal(t, third, recs[0].seq)
	require.Equal(t, int(fourth+3-third), len(recs))
}

// TestALogOpenedOnAnEmptySegmentAppendsToAFileThatStays: a crash after the
// log made a segment and before its first record (at start-up, say, or
// right after a roll) leaves that segment empty, and the next open starts a
// segment of the same name. The log must append to a file that is still
// there once the open has dropped what it replayed: before, the segment was
// listed twice, and dropping the older entry deleted the file the log then
// appended to, so every write until the next roll was lost to a power loss.
func TestALogOpenedOnAnEmptySegmentAppendsToAFileThatStays(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	w, err := openWAL(dir, 1)
	require.NoError(t, err)
	w.add(overlayOf("a", "1"))
	require.NoError(t, w.flush())
	require.NoError(t, w.close()) // the crash: the log is left as it is

	for run := range 2 { // a second crash before any record, then a run that writes
		_, next, err := readWAL(dir)
		require.NoError(t, err)
		w, err = openWAL(dir, next)
		require.NoError(t, err)
		require.NoError(t, w.removeApplied(w.next-1), "the open drops what it replayed")
		require.Equal(t, []uint64{w.next}, w.segments, "run %d", run)
		require.FileExists(t, segmentName(dir, w.next), "run %d", run)
		if run == 0 {
			require.NoError(t, w.close())
		}
	}
	w.add(overlayOf("b", "2"))
	require.NoError(t, w.flush())
	require.NoError(t, w.close())
	recs, _, err := readWAL(dir)
	require.NoError(t, err)
	require.Len(t, recs, 1, "the write after the empty segment is in the log")
	require.Equal(t, "b", string(recs[0].entries[0].key))
}

// TestSegmentsAnEarlierRunLeftAreDeletedNotRecycled: what a crash left in a
// segment past the records the open read back is unknown (a later record can
// outlive a torn one before it), so no recycled file is named after a bound
// that may not hold for it: segments the open replayed are deleted.
func TestSegmentsAnEarlierRunLeftAreDeletedNotRecycled(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	val := string(make([]byte, 1<<20))
	w, err := openWAL(dir, 1)
	require.NoError(t, err)
	for len(w.segments) < 2 {
		w.add(overlayOf("k", val))
		require.NoError(t, w.flush())
	}
	require.NoError(t, w.close()) // a crash with two segments

	_, next, err := readWAL(dir)
	require.NoError(t, err)
	w, err = openWAL(dir, next)
	require.NoError(t, err)
	require.NoError(t, w.removeApplied(w.next-1))
	defer w.close()
	recycled, _, err := findRecycled(dir)
	require.NoError(t, err)
	require.Empty(t, recycled)
	segs, err := listSegments(dir)
	require.NoError(t, err)
	require.Equal(t, []uint64{next}, segs)
}
