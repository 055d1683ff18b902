package kv

// Badger's memtables are written through memory-mapped files (NNNNN.mem in
// the data directory) that Badger makes sparse: twice the memtable's size,
// not one block allocated. Each commit writes into pages of that file, and
// when the filesystem has no block left for one, the write is a SIGBUS that
// kills the process (on tmpfs and ext4 alike), however much room the free-
// space guard (space.go) meant to keep: another process may have taken it.
//
// So every memtable file Badger writes is allocated before it writes it:
// the current one at open, and the next one before Badger rotates to it.
// Badger names the next memtable's file after the newest one, plus one, and
// makes it by opening that name and, finding it empty, sizing it; a file
// made there beforehand, empty but with its blocks allocated past its end
// (FALLOC_FL_KEEP_SIZE), keeps those blocks when Badger sizes it. Only the
// part Badger can fill is allocated: a memtable is full once its file holds
// MemTableSize bytes, and one commit may pass that by one batch.
//
// This is the second place Tether looks at Badger's files (recovery.go's
// removal of empty memtable files is the first, and it also removes a
// prepared file a crash left). If Badger ever names or makes them another
// way, the prepared file is left unused and empty, and TestMemtablesPrepared
// fails.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// memtableFiles prepares Badger's memtable files in one directory.
type memtableFiles struct {
	dir  string
	size int64 // the bytes of a memtable file Badger can write

	mu sync.Mutex
	// next is the number of the file prepared for Badger's next memtable
	// (0: none yet).
	next int
}

func newMemtableFiles(dir string, memTableSize, maxBatchSize int64) *memtableFiles {
	return &memtableFiles{dir: dir, size: memTableSize + maxBatchSize + 1<<20}
}

func memtablePath(dir string, fid int) string {
	return filepath.Join(dir, fmt.Sprintf("%05d.mem", fid))
}

// open allocates the newest memtable file (the one Badger writes now) and
// prepares the next. Call it after each open of Badger.
func (m *memtableFiles) open() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return err
	}
	newest := 0
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".mem")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(name); err == nil && n > newest {
			newest = n
		}
	}
	if newest == 0 {
		return nil // in memory, or Badger keeps no memtable file
	}
	if err := allocate(memtablePath(m.dir, newest), m.size); err != nil {
		return err
	}
	m.next = newest + 1
	return m.prepareLocked(true)
}

// prepare makes sure the file for Badger's next memtable is prepared: once
// Badger has taken the prepared one (it is no longer empty), the one after
// it is. The applier calls it before every commit (a memtable is far larger
// than one commit, so Badger rotates at most once between two calls).
func (m *memtableFiles) prepare() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.prepareLocked(false)
}

// prepareLocked prepares file m.next, or m.next+1 once Badger has taken
// m.next; force prepares m.next whatever it holds (just after open).
func (m *memtableFiles) prepareLocked(force bool) error {
	if m.next == 0 {
		return nil
	}
	path := memtablePath(m.dir, m.next)
	info, err := os.Stat(path)
	switch {
	case err == nil && info.Size() > 0:
		m.next++ // Badger's now: prepare the one after it
		path = memtablePath(m.dir, m.next)
	case err == nil && !force:
		return nil // prepared and waiting (or its allocation failed: retried below)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return preallocate(path, m.size)
}

// drop removes the prepared file, which Badger must not find empty when it
// opens (it refuses to). Call it after closing Badger.
func (m *memtableFiles) drop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next == 0 {
		return nil
	}
	path := memtablePath(m.dir, m.next)
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Size() != 0 {
		return nil // Badger's own
	}
	return os.Remove(path)
}

// allocate makes sure the first size bytes of the existing file at path
// have their blocks, without changing its length or contents.
func allocate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return errors.Join(fallocateKeepSize(f, size), f.Close())
}

// preallocate makes the empty file at path (if missing) with its first size
// bytes allocated past its end. On an error the file is left empty, for the
// next try or for Badger, which sizes it as it would a file of its own.
func preallocate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	return errors.Join(fallocateKeepSize(f, size), f.Close())
}
