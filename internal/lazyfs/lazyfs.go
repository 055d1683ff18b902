// Package lazyfs is a test filesystem, in the style of LazyFS, that loses
// every change not yet fsynced when it is "crashed": a simulated power loss.
//
// Mount serves a FUSE filesystem (github.com/hanwen/go-fuse/v2) over a backing
// directory. What a program writes is kept in memory, in the filesystem's own
// state, and reaches the backing directory only when the program asks for it
// to be durable:
//
//   - file data and size: on FUSE FSYNC, which is what fsync(2), fdatasync(2)
//     and msync(2) of a MAP_SHARED mapping send (the kernel first writes the
//     dirty mmap pages back to us as WRITE requests). close(2) without fsync
//     persists nothing;
//   - directory entries (create, link, rename, unlink, mkdir, rmdir): by the
//     rule chosen in Options.Dirs, Lenient or Strict.
//
// Crash drops everything unsynced and unmounts (which also drops the kernel's
// page cache of the mount): the backing directory then holds exactly what was
// synced. Unmount is a clean shutdown: it persists everything first.
//
// How it works: every regular file has a private "object" file in a state
// directory beside the backing directory (on the same filesystem) holding
// its synced content; a file's durable names in the backing directory are hard
// links to that object. Unsynced data is a set of dirty 4 KiB pages and a
// pending size in memory; reads merge them over the object. Directory entries
// are two maps per directory, the live one (what programs see) and the durable
// one (what the backing directory shows); making an entry durable copies it
// from the first to the second and links, unlinks or renames in the backing
// directory. File locks are left to the kernel (they are not forwarded).
//
// Only regular files and directories are supported (no symlinks, device
// nodes or extended attributes). Mode changes are written through at the
// next fsync of the file; ownership and times are not modelled for loss.
package lazyfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/tether-run/tether/internal/testsignal"
)

// DirRule is when a directory entry (a created, linked, renamed or removed
// name) becomes durable.
type DirRule int

const (
	// Lenient: an entry becomes durable when the file (or directory) it
	// names, or named, is fsynced, or when its directory is fsynced. This is
	// roughly what a journaling filesystem such as ext4 gives.
	Lenient DirRule = iota
	// Strict: an entry becomes durable only when its parent directory is
	// fsynced; a new file that was fsynced but whose directory was not is
	// gone after a crash. This is the most POSIX allows.
	Strict
)

func (r DirRule) String() string {
	switch r {
	case Lenient:
		return "lenient"
	case Strict:
		return "strict"
	}
	return fmt.Sprintf("DirRule(%d)", int(r))
}

// Options configure a mount.
type Options struct {
	// Dirs is the rule for directory entries; Lenient by default.
	Dirs DirRule
	// StateDir is where the private state (the object files) lives. It must
	// be on the same filesystem as the backing directory (hard links join
	// them). By default a new directory beside the backing directory; it is
	// removed by Crash and Unmount.
	StateDir string
	// NoBackingSync skips the real fsync(2) of the backing files when a
	// program syncs: the simulated crash does not need it, only a real power
	// loss of the machine running the test would.
	NoBackingSync bool
	// SyncLatency is added to every FSYNC (of a file or a directory), as a
	// disk's flush would take: it widens the window in which a program's
	// unsynced state is visible to others, which is where durability bugs
	// hide.
	SyncLatency time.Duration
	// Debug logs every FUSE request.
	Debug bool
}

// Stats count what the filesystem saw. Dropped* are set by Crash.
type Stats struct {
	Writes         int64 // WRITE requests
	WriteBytes     int64
	Fsyncs         int64 // FSYNC requests on files
	DirFsyncs      int64 // FSYNC requests on directories
	DroppedPages   int64 // dirty 4 KiB pages dropped by Crash
	DroppedResizes int64 // files whose unsynced size change Crash dropped
	DroppedEntries int64 // directory entries whose unsynced change Crash dropped
}

// FS is a mounted lazyfs.
type FS struct {
	// TestSignals tell tests what the kernel's asynchronous calls did; off
	// unless a test enables them.
	TestSignals TestSignals

	backing  string
	mnt      string
	opts     Options
	stateDir string
	server   *fuse.Server
	root     *dirNode

	// ns guards the namespace: every dirNode's maps and parent links and
	// every fileNode's link sets, and the backing directory.
	ns      sync.Mutex
	nextIno atomic.Uint64
	files   sync.Map // ino -> *fileNode, for Crash and Unmount

	crashed atomic.Bool
	done    atomic.Bool

	writes, writeBytes, fsyncs, dirFsyncs atomic.Int64
	droppedPages, droppedResizes          atomic.Int64
	droppedEntries                        atomic.Int64
}

// TestSignals are the filesystem's signals to tests.
type TestSignals struct {
	// Released is sent after each Release (the last close of an open file,
	// which the kernel sends after close returns), true when it forgot a
	// file that had no name left.
	Released testsignal.Signal[bool]
}

// Available reports why lazyfs cannot be mounted here, or nil if it can:
// it needs /dev/fuse, fusermount3 (or fusermount) and root.
func Available() error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("no /dev/fuse: %w", err)
	}
	_, err3 := exec.LookPath("fusermount3")
	_, err2 := exec.LookPath("fusermount")
	if err3 != nil && err2 != nil {
		return errors.New("neither fusermount3 nor fusermount is on PATH (apt-get install fuse3)")
	}
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	return nil
}

// Mount serves backingDir at mountpoint (created if missing).
func Mount(backingDir, mountpoint string, opts Options) (*FS, error) {
	backing, err := filepath.Abs(backingDir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(backing); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("lazyfs: %s is not a directory", backing)
	}
	if err := os.MkdirAll(mountpoint, 0o755); err != nil {
		return nil, err
	}
	l := &FS{backing: backing, mnt: mountpoint, opts: opts}
	l.stateDir = opts.StateDir
	if l.stateDir == "" {
		l.stateDir, err = os.MkdirTemp(filepath.Dir(backing), "."+filepath.Base(backing)+".lazyfs-")
		if err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(l.stateDir, 0o700); err != nil {
		return nil, err
	}
	l.nextIno.Store(1)
	if err := l.load(); err != nil {
		l.closeFiles()
		os.RemoveAll(l.stateDir)
		return nil, fmt.Errorf("lazyfs: loading %s: %w", backing, err)
	}
	timeout := time.Second
	fopts := &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName:        "lazyfs:" + backing,
			Name:          "lazyfs",
			DisableXAttrs: true,
			Debug:         opts.Debug,
			// Locks are not forwarded: the kernel keeps flock and fcntl
			// locks itself, which is all a single-host program needs.
			EnableLocks: false,
		},
		EntryTimeout: &timeout,
		AttrTimeout:  &timeout,
		RootStableAttr: &fs.StableAttr{
			Mode: syscall.S_IFDIR, Ino: l.root.ino,
		},
	}
	srv, err := fs.Mount(mountpoint, &dirOps{d: l.root}, fopts)
	if err != nil {
		l.closeFiles()
		os.RemoveAll(l.stateDir)
		return nil, fmt.Errorf("lazyfs: mounting %s: %w", mountpoint, err)
	}
	l.server = srv
	return l, nil
}

// Mountpoint is where the filesystem is mounted.
func (l *FS) Mountpoint() string { return l.mnt }

// Backing is the backing directory.
func (l *FS) Backing() string { return l.backing }

// Rule is the directory-entry rule of this mount.
func (l *FS) Rule() DirRule { return l.opts.Dirs }

// Stats is a snapshot of the counters.
func (l *FS) Stats() Stats {
	return Stats{
		Writes: l.writes.Load(), WriteBytes: l.writeBytes.Load(),
		Fsyncs: l.fsyncs.Load(), DirFsyncs: l.dirFsyncs.Load(),
		DroppedPages: l.droppedPages.Load(), DroppedResizes: l.droppedResizes.Load(),
		DroppedEntries: l.droppedEntries.Load(),
	}
}

// Crash simulates a power loss: every change not yet synced is dropped and the
// filesystem is unmounted (dropping the kernel's page cache of it). The
// programs using it should be dead (SIGKILL) first; if the mount is still
// busy it is detached lazily and answers EIO from then on. Afterwards the
// backing directory holds exactly what was synced.
func (l *FS) Crash() error {
	if l.done.Swap(true) {
		return errors.New("lazyfs: already unmounted")
	}
	l.crashed.Store(true)
	// Wait for any persist in flight: they take ns or a file's lock and
	// check crashed under it.
	l.ns.Lock()
	l.droppedEntries.Store(l.root.countPending(map[*dirNode]bool{}))
	l.ns.Unlock()
	var pages, resizes int64
	l.files.Range(func(_, v any) bool {
		f := v.(*fileNode)
		f.mu.Lock()
		pages += int64(len(f.pages))
		if f.size != f.syncedSize || f.minSize != f.syncedSize {
			resizes++
		}
		clear(f.pages)
		f.mu.Unlock()
		return true
	})
	l.droppedPages.Store(pages)
	l.droppedResizes.Store(resizes)
	err := l.unmount()
	l.closeFiles()
	return errors.Join(err, os.RemoveAll(l.stateDir))
}

// Unmount is a clean shutdown: it unmounts (the kernel first writes back
// whatever it still holds), then persists every file's data and every
// directory entry, as if everything had been fsynced.
func (l *FS) Unmount() error {
	if l.done.Swap(true) {
		return errors.New("lazyfs: already unmounted")
	}
	err := l.unmount()
	var errs []error
	l.files.Range(func(_, v any) bool {
		f := v.(*fileNode)
		f.mu.Lock()
		if e := f.syncLocked(); e != nil {
			errs = append(errs, e)
		}
		f.mu.Unlock()
		return true
	})
	l.ns.Lock()
	errs = append(errs, l.persistTree(l.root, map[*dirNode]bool{}))
	l.ns.Unlock()
	l.crashed.Store(true) // nothing more may reach the backing directory
	l.closeFiles()
	return errors.Join(err, errors.Join(errs...), os.RemoveAll(l.stateDir))
}

// unmount detaches the FUSE mount and waits for the server to stop; a busy
// mount is detached lazily (MNT_DETACH).
func (l *FS) unmount() error {
	err := l.server.Unmount()
	if err != nil {
		if derr := syscall.Unmount(l.mnt, syscall.MNT_DETACH); derr != nil {
			return fmt.Errorf("lazyfs: unmounting %s: %w (lazy unmount: %v)", l.mnt, err, derr)
		}
		err = nil
	}
	waited := make(chan struct{})
	go func() { l.server.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		// A lazily detached mount is served until its last user lets go;
		// crashed makes every request fail meanwhile.
	}
	return err
}

func (l *FS) closeFiles() {
	l.files.Range(func(k, v any) bool {
		f := v.(*fileNode)
		f.mu.Lock()
		if f.obj != nil {
			f.obj.Close()
			f.obj = nil
		}
		f.mu.Unlock()
		l.files.Delete(k)
		return true
	})
}

// persistTree makes every live entry under d durable, depth first, so that
// Unmount leaves the backing directory equal to what programs saw.
func (l *FS) persistTree(d *dirNode, seen map[*dirNode]bool) error {
	if seen[d] {
		return nil
	}
	seen[d] = true
	var errs []error
	errs = append(errs, l.applyDir(d))
	for _, n := range d.live {
		if sub, ok := n.(*dirNode); ok {
			errs = append(errs, l.persistTree(sub, seen))
		}
	}
	return errors.Join(errs...)
}
