package kv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// With Options.Reopens, a log left by a crash is applied at open and
// flushed by the caller's Reopen: the start opens Badger twice (each open
// makes a value log), where one that flushes at open and reopens after
// its scan opens it three times. The replayed segments stay until Reopen
// has flushed their records, and Start refuses to run before.
func TestAReplayedLogIsFlushedByTheCallersReopen(t *testing.T) {
	t.Parallel()
	for _, reopens := range []bool{true, false} {
		dir := t.TempDir()
		s := open(t, dir, Options{})
		require.NoError(t, s.Close())
		w, err := openWAL(filepath.Join(dir, "wal"), 100)
		require.NoError(t, err)
		w.add(overlayOf("a", "1"))
		w.add(overlayOf("b", "2"))
		require.NoError(t, w.flush())
		require.NoError(t, w.close())
		before := newestVlog(t, dir)

		s, err = Open(Options{Dir: dir, Reopens: reopens})
		require.NoError(t, err)
		for k, want := range map[string]string{"a": "1", "b": "2"} {
			v, ok := get(t, s, k)
			require.True(t, ok, k)
			require.Equal(t, want, v, k)
		}
		segs, err := listSegments(filepath.Join(dir, "wal"))
		require.NoError(t, err)
		if reopens {
			require.Equal(t, []uint64{100, 102}, segs, "the replayed segment stays until Reopen flushed it")
			require.PanicsWithValue(t, "kv: Start before Reopen on a store opened with Options.Reopens", s.Start)
		} else {
			require.Equal(t, []uint64{102}, segs)
		}
		require.NoError(t, s.Reopen())
		segs, err = listSegments(filepath.Join(dir, "wal"))
		require.NoError(t, err)
		require.Equal(t, []uint64{102}, segs)
		opens := 3
		if reopens {
			opens = 2
		}
		require.Equal(t, before+opens, newestVlog(t, dir), "opens of Badger (reopens: %v)", reopens)

		s.Start()
		v, ok := get(t, s, "a")
		require.True(t, ok)
		require.Equal(t, "1", v)
		require.NoError(t, s.Close())
	}
}

// newestVlog is the highest value-log number in dir: one more per open.
func newestVlog(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	top := 0
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".vlog"); ok {
			fid, err := strconv.Atoi(id)
			require.NoError(t, err)
			top = max(top, fid)
		}
	}
	return top
}
