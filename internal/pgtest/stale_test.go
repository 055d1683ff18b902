package pgtest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Only a quiet directory whose server is not running is removed.
func TestRemoveStaleKeepsLiveAndNewDirectories(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * staleAfter)
	mk := func(name string, logAt time.Time, pid int) string {
		d := filepath.Join(parent, name)
		require.NoError(t, os.MkdirAll(filepath.Join(d, "data"), 0o755))
		if !logAt.IsZero() {
			require.NoError(t, os.WriteFile(filepath.Join(d, "log"), nil, 0o644))
			require.NoError(t, os.Chtimes(filepath.Join(d, "log"), logAt, logAt))
		}
		if pid != 0 {
			require.NoError(t, os.WriteFile(filepath.Join(d, "data", "postmaster.pid"), []byte(strconv.Itoa(pid)+"\n/x\n"), 0o644))
		}
		return d
	}
	dead := mk("tether-pgtest-dead", old, 0x3fffffff) // no such pid
	stopped := mk("tether-pgtest-stopped", old, 0)
	live := mk("tether-pgtest-live", old, os.Getpid())
	recent := mk("tether-pgtest-recent", now, 0x3fffffff)
	initdb := mk("tether-pgtest-initdb", time.Time{}, 0)
	other := mk("something-else", old, 0)
	removeStale(parent, now)
	for d, kept := range map[string]bool{dead: false, stopped: false, live: true, recent: true, initdb: true, other: true} {
		_, err := os.Stat(d)
		require.Equal(t, kept, err == nil, d)
	}
}
