package lazyfs

// Child-process helpers: TestMain runs one instead of the tests when
// LAZYFS_HELPER names it. They touch the mount from a process that does not
// serve it.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"
)

const (
	helperEnv    = "LAZYFS_HELPER"
	helperDirEnv = "LAZYFS_DIR"
	helperArgEnv = "LAZYFS_ARG"
)

// helper is a child process running one helper.
func helper(t *testing.T, name, dir string, extraEnv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+name, helperDirEnv+"="+dir)
	cmd.Env = append(cmd.Env, extraEnv...)
	return cmd
}

func runHelper(name, dir string, _ []string) int {
	var err error
	switch name {
	case "mmap":
		err = helperMmap(dir)
	case "badger-write":
		err = helperBadgerWrite(dir, os.Getenv(helperArgEnv))
	case "badger-check":
		err = helperBadgerCheck(dir, os.Getenv(helperArgEnv))
	default:
		err = fmt.Errorf("unknown helper %q", name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}

// helperMmap maps dir/m (64 KiB) shared, fills pages 0 and 5 with 'A' and
// msyncs them, then fills page 7 with 'B' and only unmaps and closes.
func helperMmap(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, "m"), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := unix.Mmap(int(f.Fd()), 0, 16*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	copy(data[0:pageSize], bytes.Repeat([]byte{'A'}, pageSize))
	copy(data[5*pageSize:6*pageSize], bytes.Repeat([]byte{'A'}, pageSize))
	if err := unix.Msync(data[:8*pageSize], unix.MS_SYNC); err != nil {
		return fmt.Errorf("msync: %w", err)
	}
	copy(data[7*pageSize:8*pageSize], bytes.Repeat([]byte{'B'}, pageSize))
	return unix.Munmap(data)
}

func badgerOpts(dir string) badger.Options {
	// Small memtables and tables, so that a few seconds of writes rotate
	// memtables, flush them to L0 tables and compact.
	return badger.DefaultOptions(dir).
		WithLogger(nil).
		WithSyncWrites(true).
		WithMemTableSize(256 << 10).
		WithBaseTableSize(1 << 20).
		WithValueLogFileSize(1 << 20).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(4).
		WithNumCompactors(2).
		WithValueThreshold(1 << 10). // every 8th value goes to the value log
		WithBlockCacheSize(8 << 20)
}

// helperBadgerWrite writes keys from 4 goroutines until it is killed,
// printing "ack KEY" once each commit has returned.
func helperBadgerWrite(dir, prefix string) error {
	db, err := badger.Open(badgerOpts(dir))
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	errc := make(chan error, 4)
	for g := range 4 {
		go func() {
			small := bytes.Repeat([]byte{byte('a' + g)}, 300)
			big := bytes.Repeat([]byte{byte('A' + g)}, 2000)
			for j := 0; ; j++ {
				val := small
				if j%8 == 0 {
					val = big
				}
				key := fmt.Sprintf("%s-%d-%08d", prefix, g, j)
				if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(key), val) }); err != nil {
					errc <- err
					return
				}
				mu.Lock()
				fmt.Fprintln(out, "ack", key)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	return <-errc
}

// helperBadgerCheck opens the store and checks that every key listed in the
// file keysFile is there; it prints "missing N of M".
func helperBadgerCheck(dir, keysFile string) error {
	raw, err := os.ReadFile(keysFile)
	if err != nil {
		return err
	}
	db, err := badger.Open(badgerOpts(dir))
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	keys := strings.Fields(string(raw))
	missing := 0
	err = db.View(func(txn *badger.Txn) error {
		for _, k := range keys {
			if _, err := txn.Get([]byte(k)); errors.Is(err, badger.ErrKeyNotFound) {
				if missing < 5 {
					fmt.Println("lost", k)
				}
				missing++
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	fmt.Printf("missing %s of %d\n", strconv.Itoa(missing), len(keys))
	return errors.Join(err, db.Close())
}
