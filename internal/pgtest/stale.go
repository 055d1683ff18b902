package pgtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// staleAfter is how long a server's directory must have been quiet, its
// server not running, before a later test binary removes it.
const staleAfter = 10 * time.Minute

// removeStale removes the directories under parent that servers of test
// binaries which died before stopping them left behind (a test binary
// killed by its timeout, or crashed by a panic, takes its server with it
// but not the directory). A directory is stale when its log exists and has
// not been written for staleAfter and no process named in its
// postmaster.pid is alive: a server running, one between Kill and Restart,
// and one being made by initdb (no log yet) are all kept.
func removeStale(parent string, now time.Time) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, "tether-pgtest-*"))
	for _, d := range dirs {
		st, err := os.Stat(filepath.Join(d, "log"))
		if err != nil || now.Sub(st.ModTime()) < staleAfter || running(d) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// running reports whether the postmaster that dir's postmaster.pid names
// is alive (a reused pid counts as alive: the directory is kept).
func running(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return false
	}
	err = syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
