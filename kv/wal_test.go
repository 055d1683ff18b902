package kv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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

// TestLogSegmentsRollAndAreRemovedOnceApplied: a busy log moves to new
// segments and keeps only what Badger may not hold yet.
func TestLogSegmentsRollAndAreRemovedOnceApplied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, Options{})
	big := make([]byte, 256<<10)
	for i := range 600 { // 150 MiB: more than two segments
		require.NoError(t, s.Update(t.Context(), func(tx *Txn) error {
			return tx.Set([]byte{byte(i >> 8), byte(i)}, big)
		}))
	}
	// One more write runs the removal after the applier caught up.
	require.Eventually(t, func() bool {
		require.NoError(t, s.Update(t.Context(), func(tx *Txn) error { return tx.Set([]byte("x"), nil) }))
		segs, err := listSegments(filepath.Join(dir, "wal"))
		require.NoError(t, err)
		return len(segs) == 1
	}, 10e9, 10e6)
	require.NoError(t, s.Close())
	s = open(t, dir, Options{})
	defer s.Close()
	v, ok := get(t, s, string([]byte{2, 87}))
	require.True(t, ok)
	require.Len(t, v, 256<<10)
}
