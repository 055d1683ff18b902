package lazyfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// errCrashed is what every request gets once Crash has begun.
var errCrashed = errors.New("lazyfs: crashed")

// node is a *fileNode or a *dirNode.
type node interface{ inode() uint64 }

// link is one name of a file: an entry of a directory.
type link struct {
	dir  *dirNode
	name string
}

// dirNode is a directory. All its fields but ino are guarded by FS.ns.
type dirNode struct {
	l   *FS
	ino uint64

	mode                uint32 // permission bits
	uid, gid            uint32
	atime, mtime, ctime time.Time

	live map[string]node // what programs see
	dur  map[string]node // what survives a crash (the backing directory, once reachable)

	liveParent *dirNode // nil for the root and for a removed directory
	liveName   string
	durParent  *dirNode // nil for the root and while it has no durable name
	durName    string
	removed    bool // rmdir'd
}

func (d *dirNode) inode() uint64 { return d.ino }

// fileNode is a regular file.
type fileNode struct {
	l       *FS
	ino     uint64
	objPath string // the object file: the synced content

	handles atomic.Int64 // open file handles (a mapping holds one too)

	mu   sync.Mutex
	obj  *os.File
	size int64 // what programs see
	// minSize is the smallest size the file had since the last sync: bytes
	// at and beyond it that are not in a dirty page read as zeros, whatever
	// the object holds there.
	minSize    int64
	syncedSize int64 // the object's size
	pages      map[int64][]byte
	mode       uint32 // permission bits
	modeDirty  bool
	uid, gid   uint32
	atime      time.Time
	mtime      time.Time
	ctime      time.Time

	// Guarded by FS.ns, not mu.
	live map[link]bool
	dur  map[link]bool
}

func (f *fileNode) inode() uint64 { return f.ino }

const pageSize = 4096

func (l *FS) newDir(mode, uid, gid uint32) *dirNode {
	now := time.Now()
	return &dirNode{
		l: l, ino: l.nextIno.Add(1), mode: mode & 0o7777, uid: uid, gid: gid,
		atime: now, mtime: now, ctime: now,
		live: map[string]node{}, dur: map[string]node{},
	}
}

// newFile makes a file with an empty object.
func (l *FS) newFile(mode, uid, gid uint32) (*fileNode, error) {
	f := l.fileNode(mode, uid, gid)
	obj, err := os.OpenFile(f.objPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := obj.Chmod(os.FileMode(f.mode)); err != nil {
		obj.Close()
		os.Remove(f.objPath)
		return nil, err
	}
	f.obj = obj
	l.files.Store(f.ino, f)
	return f, nil
}

func (l *FS) fileNode(mode, uid, gid uint32) *fileNode {
	now := time.Now()
	ino := l.nextIno.Add(1)
	return &fileNode{
		l: l, ino: ino, objPath: filepath.Join(l.stateDir, strconv.FormatUint(ino, 10)),
		pages: map[int64][]byte{}, mode: mode & 0o7777, uid: uid, gid: gid,
		atime: now, mtime: now, ctime: now,
		live: map[link]bool{}, dur: map[link]bool{},
	}
}

// load builds the tree from the backing directory: everything in it is
// durable.
func (l *FS) load() error {
	st, err := os.Stat(l.backing)
	if err != nil {
		return err
	}
	sys := st.Sys().(*syscall.Stat_t)
	l.root = l.newDir(uint32(st.Mode().Perm()), sys.Uid, sys.Gid)
	return l.loadDir(l.root, l.backing, map[uint64]*fileNode{})
}

func (l *FS) loadDir(d *dirNode, path string, byIno map[uint64]*fileNode) error {
	ents, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := filepath.Join(path, e.Name())
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			sub := l.newDir(st.Mode, st.Uid, st.Gid)
			sub.atime, sub.mtime, sub.ctime = tsTime(st.Atim), tsTime(st.Mtim), tsTime(st.Ctim)
			d.live[e.Name()], d.dur[e.Name()] = sub, sub
			sub.liveParent, sub.liveName = d, e.Name()
			sub.durParent, sub.durName = d, e.Name()
			if err := l.loadDir(sub, p, byIno); err != nil {
				return err
			}
		case syscall.S_IFREG:
			f := byIno[st.Ino]
			if f == nil {
				f = l.fileNode(st.Mode, st.Uid, st.Gid)
				if err := os.Link(p, f.objPath); err != nil {
					return err
				}
				obj, err := os.OpenFile(f.objPath, os.O_RDWR, 0)
				if err != nil {
					return err
				}
				f.obj = obj
				f.size, f.minSize, f.syncedSize = st.Size, st.Size, st.Size
				f.atime, f.mtime, f.ctime = tsTime(st.Atim), tsTime(st.Mtim), tsTime(st.Ctim)
				byIno[st.Ino] = f
				l.files.Store(f.ino, f)
			}
			d.live[e.Name()], d.dur[e.Name()] = f, f
			f.live[link{d, e.Name()}], f.dur[link{d, e.Name()}] = true, true
		default:
			return fmt.Errorf("%s: unsupported file type %#o", p, st.Mode&syscall.S_IFMT)
		}
	}
	return nil
}

func tsTime(ts syscall.Timespec) time.Time { return time.Unix(ts.Sec, ts.Nsec) }

// ---- file data (under fileNode.mu) ----

// readLocked fills dst with the file's content at off; off+len(dst) must not
// pass size.
func (f *fileNode) readLocked(dst []byte, off int64) error {
	for len(dst) > 0 {
		pi, po := off/pageSize, int(off%pageSize)
		n := min(len(dst), pageSize-po)
		if p, ok := f.pages[pi]; ok {
			copy(dst[:n], p[po:])
		} else {
			// A run of clean pages is one read of the object.
			for next := pi + 1; n < len(dst); next++ {
				if _, dirty := f.pages[next]; dirty {
					break
				}
				n += min(len(dst)-n, pageSize)
			}
			if err := f.readObj(dst[:n], off); err != nil {
				return err
			}
		}
		dst, off = dst[n:], off+int64(n)
	}
	return nil
}

// readObj reads synced content: below minSize from the object, zeros above.
func (f *fileNode) readObj(dst []byte, off int64) error {
	clear(dst)
	if off >= f.minSize {
		return nil
	}
	m := min(int64(len(dst)), f.minSize-off)
	if _, err := f.obj.ReadAt(dst[:m], off); err != nil {
		return err
	}
	return nil
}

// writeLocked writes data at off into dirty pages.
func (f *fileNode) writeLocked(data []byte, off int64) error {
	end := off + int64(len(data))
	for len(data) > 0 {
		pi, po := off/pageSize, int(off%pageSize)
		n := min(len(data), pageSize-po)
		p, ok := f.pages[pi]
		if !ok {
			p = make([]byte, pageSize)
			if n < pageSize {
				// A partly written page starts as the current content.
				start := pi * pageSize
				if valid := min(int64(pageSize), f.size-start); valid > 0 {
					if err := f.readLocked(p[:valid], start); err != nil {
						return err
					}
				}
			}
			f.pages[pi] = p
		}
		copy(p[po:], data[:n])
		data, off = data[n:], off+int64(n)
	}
	if end > f.size {
		f.size = end
	}
	return nil
}

// truncateLocked sets the size. Bytes past the new size are gone; growing
// again reads zeros there.
func (f *fileNode) truncateLocked(size int64) {
	if size < f.size {
		for pi := range f.pages {
			if pi*pageSize >= size {
				delete(f.pages, pi)
			}
		}
		if p, ok := f.pages[size/pageSize]; ok {
			clear(p[size%pageSize:])
		}
		f.minSize = min(f.minSize, size)
	}
	f.size = size
}

// syncLocked writes the dirty pages and the size to the object and syncs it.
func (f *fileNode) syncLocked() error {
	if f.l.crashed.Load() || f.obj == nil {
		return errCrashed
	}
	if f.syncedSize > f.minSize {
		if err := f.obj.Truncate(f.minSize); err != nil {
			return err
		}
	}
	idx := make([]int64, 0, len(f.pages))
	for pi := range f.pages {
		idx = append(idx, pi)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	var buf []byte
	for i := 0; i < len(idx); {
		// A run of consecutive pages is one write.
		j := i + 1
		for j < len(idx) && idx[j] == idx[j-1]+1 && j-i < 256 {
			j++
		}
		start := idx[i] * pageSize
		buf = buf[:0]
		for _, pi := range idx[i:j] {
			buf = append(buf, f.pages[pi]...)
		}
		if lim := f.size - start; int64(len(buf)) > lim {
			buf = buf[:max(lim, 0)]
		}
		if _, err := f.obj.WriteAt(buf, start); err != nil {
			return err
		}
		i = j
	}
	if err := f.obj.Truncate(f.size); err != nil {
		return err
	}
	if f.modeDirty {
		if err := f.obj.Chmod(os.FileMode(f.mode)); err != nil {
			return err
		}
		f.modeDirty = false
	}
	if !f.l.opts.NoBackingSync {
		if err := f.obj.Sync(); err != nil {
			return err
		}
	}
	clear(f.pages)
	f.syncedSize, f.minSize = f.size, f.size
	return nil
}

// ---- namespace (under FS.ns) ----

// backingPath is where d is in the backing directory, if it is reachable
// there through durable entries.
func (d *dirNode) backingPath() (string, bool) {
	if d == d.l.root {
		return d.l.backing, true
	}
	if d.durParent == nil {
		return "", false
	}
	p, ok := d.durParent.backingPath()
	if !ok {
		return "", false
	}
	return filepath.Join(p, d.durName), true
}

// applyEntry makes d's entry name durable: the durable entry becomes the
// live one (which may be none).
func (l *FS) applyEntry(d *dirNode, name string) error {
	if l.crashed.Load() {
		return errCrashed
	}
	old, cur := d.dur[name], d.live[name]
	if old == cur {
		return nil
	}
	if old != nil {
		if err := l.dropDurable(d, name); err != nil {
			return err
		}
	}
	if cur == nil {
		return nil
	}
	if sub, ok := cur.(*dirNode); ok && sub.durParent != nil {
		// A directory has one durable name: making its new name durable
		// makes the whole move durable.
		if err := l.dropDurable(sub.durParent, sub.durName); err != nil {
			return err
		}
	}
	d.dur[name] = cur
	switch n := cur.(type) {
	case *fileNode:
		n.dur[link{d, name}] = true
	case *dirNode:
		n.durParent, n.durName = d, name
	}
	if dp, ok := d.backingPath(); ok {
		return materialize(filepath.Join(dp, name), cur)
	}
	return nil
}

// dropDurable removes d's durable entry name (and its path in the backing
// directory, if d is reachable there).
func (l *FS) dropDurable(d *dirNode, name string) error {
	n := d.dur[name]
	if n == nil {
		return nil
	}
	var err error
	if dp, ok := d.backingPath(); ok {
		p := filepath.Join(dp, name)
		if _, isDir := n.(*dirNode); isDir {
			err = os.RemoveAll(p)
		} else {
			err = os.Remove(p)
		}
	}
	delete(d.dur, name)
	switch n := n.(type) {
	case *fileNode:
		delete(n.dur, link{d, name})
		l.forgetLocked(n)
	case *dirNode:
		n.durParent, n.durName = nil, ""
		if n.removed {
			// Its removal is durable, so whatever it held durably is gone.
			for cname := range n.dur {
				err = errors.Join(err, l.dropDurable(n, cname))
			}
		}
	}
	return err
}

// materialize puts n's durable state at path p of the backing directory.
func materialize(p string, n node) error {
	switch n := n.(type) {
	case *fileNode:
		return os.Link(n.objPath, p)
	case *dirNode:
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(p, os.FileMode(n.mode)); err != nil {
			return err
		}
		for cname, c := range n.dur {
			if err := materialize(filepath.Join(p, cname), c); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyDir makes every entry of d durable (a directory fsync).
func (l *FS) applyDir(d *dirNode) error {
	names := make([]string, 0, len(d.live)+len(d.dur))
	for name := range d.dur {
		names = append(names, name)
	}
	for name := range d.live {
		if _, ok := d.dur[name]; !ok {
			names = append(names, name)
		}
	}
	for _, name := range names {
		if err := l.applyEntry(d, name); err != nil {
			return err
		}
	}
	return nil
}

// applySelf makes durable every entry that names n now or named it at the
// last sync (the Lenient rule for an fsync of n).
func (l *FS) applySelf(n node) error {
	var links []link
	switch n := n.(type) {
	case *fileNode:
		for k := range n.live {
			links = append(links, k)
		}
		for k := range n.dur {
			if !n.live[k] {
				links = append(links, k)
			}
		}
	case *dirNode:
		if n.liveParent != nil {
			links = append(links, link{n.liveParent, n.liveName})
		}
		if n.durParent != nil && (n.durParent != n.liveParent || n.durName != n.liveName) {
			links = append(links, link{n.durParent, n.durName})
		}
	}
	for _, k := range links {
		if err := l.applyEntry(k.dir, k.name); err != nil {
			return err
		}
	}
	return nil
}

// countPending is the number of entries whose change is not durable, in
// the tree under d (live and durable).
func (d *dirNode) countPending(seen map[*dirNode]bool) int64 {
	if seen[d] {
		return 0
	}
	seen[d] = true
	var n int64
	for name, c := range d.live {
		if d.dur[name] != c {
			n++
		}
		if sub, ok := c.(*dirNode); ok {
			n += sub.countPending(seen)
		}
	}
	for name, c := range d.dur {
		if _, ok := d.live[name]; !ok {
			n++
		}
		if sub, ok := c.(*dirNode); ok {
			n += sub.countPending(seen)
		}
	}
	return n
}

// ---- live namespace changes (under FS.ns) ----

func (d *dirNode) addLive(name string, n node) {
	d.live[name] = n
	switch n := n.(type) {
	case *fileNode:
		n.live[link{d, name}] = true
	case *dirNode:
		n.liveParent, n.liveName = d, name
	}
	d.touch()
}

func (d *dirNode) removeLive(name string) {
	n := d.live[name]
	delete(d.live, name)
	switch n := n.(type) {
	case *fileNode:
		delete(n.live, link{d, name}) // the caller forgets it if that was its last name
	case *dirNode:
		if n.liveParent == d && n.liveName == name {
			n.liveParent, n.liveName = nil, ""
		}
	}
	d.touch()
}

// forgetLocked drops a file that nobody can reach any more: no name, live
// or durable, and no open handle, and reports whether it did. Its object
// is removed. Under ns.
func (l *FS) forgetLocked(f *fileNode) (forgot bool) {
	if len(f.live) > 0 || len(f.dur) > 0 || f.handles.Load() > 0 {
		return false
	}
	if _, ok := l.files.LoadAndDelete(f.ino); !ok {
		return false
	}
	f.mu.Lock()
	if f.obj != nil {
		f.obj.Close()
		f.obj = nil
	}
	clear(f.pages)
	f.mu.Unlock()
	os.Remove(f.objPath)
	return true
}

func (d *dirNode) touch() {
	now := time.Now()
	d.mtime, d.ctime = now, now
}

// subdirs is the number of directories among d's live entries.
func (d *dirNode) subdirs() int {
	n := 0
	for _, c := range d.live {
		if _, ok := c.(*dirNode); ok {
			n++
		}
	}
	return n
}

// rename moves src's entry oldName to dst's newName, as rename(2) with
// flags (RENAME_NOREPLACE, RENAME_EXCHANGE).
func (l *FS) rename(src *dirNode, oldName string, dst *dirNode, newName string, flags uint32) syscall.Errno {
	from := src.live[oldName]
	if from == nil {
		return syscall.ENOENT
	}
	to := dst.live[newName]
	const noReplace, exchange = 1, 2 // RENAME_NOREPLACE, RENAME_EXCHANGE
	switch {
	case flags&^(noReplace|exchange) != 0:
		return syscall.EINVAL
	case flags&noReplace != 0 && to != nil:
		return syscall.EEXIST
	case flags&exchange != 0:
		if to == nil {
			return syscall.ENOENT
		}
		src.removeLive(oldName)
		dst.removeLive(newName)
		src.addLive(oldName, to)
		dst.addLive(newName, from)
		return 0
	}
	if to == from {
		return 0 // two names of one file: rename does nothing
	}
	if to != nil {
		_, fromDir := from.(*dirNode)
		toDir, isDir := to.(*dirNode)
		switch {
		case fromDir && !isDir:
			return syscall.ENOTDIR
		case !fromDir && isDir:
			return syscall.EISDIR
		case isDir && len(toDir.live) > 0:
			return syscall.ENOTEMPTY
		}
		dst.removeLive(newName)
		if isDir {
			toDir.removed = true
		}
	}
	src.removeLive(oldName)
	dst.addLive(newName, from)
	if f, ok := to.(*fileNode); ok {
		l.forgetLocked(f)
	}
	return 0
}
