package kv

// A store crashed by a simulated power loss (internal/lazyfs drops every
// write not yet fsynced), run in a child process: Badger maps its files, and
// a page fault on a mapping of the mount, taken in the process that serves
// the mount, can stall the very threads that would answer it.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/lazyfs"
	"github.com/tether-run/tether/internal/testskip"
)

const (
	helperEnv    = "KV_HELPER"     // the helper to run instead of the tests
	helperDirEnv = "KV_HELPER_DIR" // the store's directory
	helperKeyEnv = "KV_HELPER_KEY" // the key "write" sets
)

// runHelper opens the store in KV_HELPER_DIR and, for "write", sets
// KV_HELPER_KEY; it prints "ready" once done and waits to be killed.
func runHelper(name string) int {
	s, err := Open(Options{Dir: os.Getenv(helperDirEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: open:", err)
		return 1
	}
	s.Start()
	if name == "write" {
		key := os.Getenv(helperKeyEnv)
		err := s.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte(key), []byte("acknowledged")) })
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper: write:", err)
			return 1
		}
	}
	fmt.Println("ready")
	select {}
}

// runUntilReady runs the helper against dir until it prints "ready", then
// kills it (SIGKILL: nothing closes the store).
func runUntilReady(t *testing.T, name, dir string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + name, helperDirEnv + "=" + dir}, env...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		require.True(t, ok, "helper %s exited before it was ready: %s", name, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("helper %s was not ready within 60s: %s", name, stderr.String())
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
}

// TestAWriteAfterAnOpenOnAnEmptySegmentSurvivesAPowerLoss: a store opened and
// crashed before its first write leaves its newest log segment empty; the
// next run's acknowledged write must survive a power loss. Before the open
// kept that segment's file (it deleted it and appended to the unlinked file),
// the write lived only in Badger's unsynced memtable file and was lost.
func TestAWriteAfterAnOpenOnAnEmptySegmentSurvivesAPowerLoss(t *testing.T) {
	if err := lazyfs.Available(); err != nil {
		testskip.Missing(t, "FUSE", err.Error())
	}
	base := t.TempDir()
	backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
	require.NoError(t, os.Mkdir(backing, 0o755))
	opts := lazyfs.Options{NoBackingSync: true}
	fs, err := lazyfs.Mount(backing, mnt, opts)
	require.NoError(t, err)
	defer func() {
		if fs != nil {
			require.NoError(t, fs.Unmount())
		}
	}()
	crash := func() {
		require.NoError(t, fs.Crash())
		fs = nil
	}

	dir := filepath.Join(mnt, "store")
	runUntilReady(t, "open", dir) // makes the log's first segment, writes nothing
	crash()
	fs, err = lazyfs.Mount(backing, mnt, opts)
	require.NoError(t, err)
	runUntilReady(t, "write", dir, helperKeyEnv+"=k") // acknowledged before "ready"
	crash()

	// The backing directory now holds exactly what was synced.
	s := open(t, filepath.Join(backing, "store"), Options{})
	defer s.Close()
	v, ok := get(t, s, "k")
	require.True(t, ok, "the acknowledged write is lost")
	require.Equal(t, "acknowledged", v)
}
