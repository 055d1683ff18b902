package kv

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Reopen, between a scan of every record and Start, keeps every record
// readable and the store writable, and lets go of the table pages the scan
// mapped in; after Start it is refused.
func TestReopenBeforeStartReleasesTheScannedTables(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 2000
	value := strings.Repeat("v", 1000)
	s := open(t, dir, Options{})
	for i := 0; i < n; i += 500 {
		require.NoError(t, s.Update(context.Background(), func(tx *Txn) error {
			for j := i; j < i+500; j++ {
				if err := tx.Set(fmt.Appendf(nil, "k%05d", j), []byte(value)); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	require.NoError(t, s.Close()) // Badger flushes the records into a table

	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	count := func() int {
		seen := 0
		require.NoError(t, s.View(func(tx *Txn) error {
			return tx.Scan([]byte("k"), nil, false, true, func(key, val []byte) (bool, error) {
				require.Equal(t, value, string(val))
				seen++
				return true, nil
			})
		}))
		return seen
	}
	require.Equal(t, n, count())
	scanned := mappedTablesKiB(t, dir)
	require.NoError(t, s.Reopen())
	if runtime.GOOS == "linux" {
		require.Greater(t, scanned, 1000, "the scan read ~2 MB of tables through their maps")
		require.Less(t, mappedTablesKiB(t, dir), scanned/4, "reopened, the tables' read pages are no longer mapped")
	}
	require.Equal(t, n, count())

	s.Start()
	require.NoError(t, s.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte("k99999"), []byte(value)) }))
	require.Equal(t, n+1, count())
	require.Error(t, s.Reopen(), "the writer runs")
}

// mappedTablesKiB is how much of Badger's tables in dir is resident in this
// process's maps (0 where /proc/self/smaps does not exist).
func mappedTablesKiB(t *testing.T, dir string) int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0
	}
	defer f.Close()
	total, inTable := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-"):
			// A mapping's first line: address range, perms, offset, dev, inode [path].
			inTable = len(fields) >= 6 && strings.HasPrefix(fields[5], dir) && strings.HasSuffix(fields[5], ".sst")
		case inTable && fields[0] == "Rss:":
			kib, err := strconv.Atoi(fields[1])
			require.NoError(t, err)
			total += kib
		}
	}
	require.NoError(t, sc.Err())
	return total
}
