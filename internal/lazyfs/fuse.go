package lazyfs

// The FUSE side: go-fuse node types over the model in node.go. Each request
// takes either FS.ns (the namespace) or one file's mu, never both at once.

import (
	"context"
	"sort"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

type dirOps struct {
	fs.Inode
	d *dirNode
}

type fileOps struct {
	fs.Inode
	f *fileNode
}

// handle is an open file; all state is the inode's.
type handle struct{}

var (
	_ fs.NodeLookuper  = (*dirOps)(nil)
	_ fs.NodeGetattrer = (*dirOps)(nil)
	_ fs.NodeSetattrer = (*dirOps)(nil)
	_ fs.NodeReaddirer = (*dirOps)(nil)
	_ fs.NodeCreater   = (*dirOps)(nil)
	_ fs.NodeMkdirer   = (*dirOps)(nil)
	_ fs.NodeUnlinker  = (*dirOps)(nil)
	_ fs.NodeRmdirer   = (*dirOps)(nil)
	_ fs.NodeRenamer   = (*dirOps)(nil)
	_ fs.NodeLinker    = (*dirOps)(nil)
	_ fs.NodeFsyncer   = (*dirOps)(nil)
	_ fs.NodeStatfser  = (*dirOps)(nil)

	_ fs.NodeOpener    = (*fileOps)(nil)
	_ fs.NodeGetattrer = (*fileOps)(nil)
	_ fs.NodeSetattrer = (*fileOps)(nil)
	_ fs.NodeReader    = (*fileOps)(nil)
	_ fs.NodeWriter    = (*fileOps)(nil)
	_ fs.NodeWritever  = (*fileOps)(nil)
	_ fs.NodeFsyncer   = (*fileOps)(nil)
	_ fs.NodeFlusher   = (*fileOps)(nil)
	_ fs.NodeReleaser  = (*fileOps)(nil)
	_ fs.NodeAllocater = (*fileOps)(nil)
)

// errno maps an error of ours to what the caller sees.
func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if err == errCrashed {
		return syscall.EIO
	}
	return fs.ToErrno(err)
}

func owner(ctx context.Context) (uid, gid uint32) {
	if c, ok := fuse.FromContext(ctx); ok {
		return c.Uid, c.Gid
	}
	return 0, 0
}

func (o *dirOps) child(ctx context.Context, n node) *fs.Inode {
	switch n := n.(type) {
	case *dirNode:
		return o.NewInode(ctx, &dirOps{d: n}, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: n.ino})
	case *fileNode:
		return o.NewInode(ctx, &fileOps{f: n}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: n.ino})
	}
	panic("lazyfs: unknown node type")
}

// attr fills out with n's attributes; the caller holds no lock.
func (l *FS) attr(n node, out *fuse.Attr) {
	switch n := n.(type) {
	case *dirNode:
		l.ns.Lock()
		n.fill(out)
		l.ns.Unlock()
	case *fileNode:
		l.ns.Lock()
		nlink := len(n.live)
		l.ns.Unlock()
		n.mu.Lock()
		n.fill(out)
		n.mu.Unlock()
		out.Nlink = uint32(nlink)
	}
}

// fill is d's attributes; under ns.
func (d *dirNode) fill(out *fuse.Attr) {
	out.Ino = d.ino
	out.Mode = syscall.S_IFDIR | d.mode
	out.Nlink = uint32(2 + d.subdirs())
	out.Size = 4096
	out.Blocks = 8
	out.Blksize = pageSize
	out.Owner = fuse.Owner{Uid: d.uid, Gid: d.gid}
	out.SetTimes(&d.atime, &d.mtime, &d.ctime)
}

// fill is f's attributes but nlink; under f.mu.
func (f *fileNode) fill(out *fuse.Attr) {
	out.Ino = f.ino
	out.Mode = syscall.S_IFREG | f.mode
	out.Size = uint64(f.size)
	out.Blocks = (uint64(f.size) + 511) / 512
	out.Blksize = pageSize
	out.Owner = fuse.Owner{Uid: f.uid, Gid: f.gid}
	out.SetTimes(&f.atime, &f.mtime, &f.ctime)
}

// ---- directories ----

func (o *dirOps) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	l := o.d.l
	if l.crashed.Load() {
		return nil, syscall.EIO
	}
	l.ns.Lock()
	n := o.d.live[name]
	l.ns.Unlock()
	if n == nil {
		return nil, syscall.ENOENT
	}
	l.attr(n, &out.Attr)
	return o.child(ctx, n), 0
}

func (o *dirOps) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	o.d.l.attr(o.d, &out.Attr)
	return 0
}

func (o *dirOps) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	l := o.d.l
	if l.crashed.Load() {
		return syscall.EIO
	}
	l.ns.Lock()
	d := o.d
	if m, ok := in.GetMode(); ok {
		d.mode = m & 0o7777
	}
	if u, ok := in.GetUID(); ok {
		d.uid = u
	}
	if g, ok := in.GetGID(); ok {
		d.gid = g
	}
	if t, ok := in.GetATime(); ok {
		d.atime = t
	}
	if t, ok := in.GetMTime(); ok {
		d.mtime = t
	}
	d.ctime = time.Now()
	d.fill(&out.Attr)
	l.ns.Unlock()
	return 0
}

func (o *dirOps) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	l := o.d.l
	if l.crashed.Load() {
		return nil, syscall.EIO
	}
	l.ns.Lock()
	ents := make([]fuse.DirEntry, 0, len(o.d.live))
	for name, n := range o.d.live {
		mode := uint32(syscall.S_IFREG)
		if _, ok := n.(*dirNode); ok {
			mode = syscall.S_IFDIR
		}
		ents = append(ents, fuse.DirEntry{Name: name, Mode: mode, Ino: n.inode()})
	}
	l.ns.Unlock()
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
	return fs.NewListDirStream(ents), 0
}

func (o *dirOps) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	l := o.d.l
	if l.crashed.Load() {
		return nil, nil, 0, syscall.EIO
	}
	uid, gid := owner(ctx)
	l.ns.Lock()
	if o.d.live[name] != nil {
		l.ns.Unlock()
		return nil, nil, 0, syscall.EEXIST
	}
	f, err := l.newFile(mode, uid, gid)
	if err != nil {
		l.ns.Unlock()
		return nil, nil, 0, errno(err)
	}
	f.handles.Add(1)
	o.d.addLive(name, f)
	l.ns.Unlock()
	l.attr(f, &out.Attr)
	return o.child(ctx, f), &handle{}, fuse.FOPEN_KEEP_CACHE, 0
}

func (o *dirOps) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	l := o.d.l
	if l.crashed.Load() {
		return nil, syscall.EIO
	}
	uid, gid := owner(ctx)
	l.ns.Lock()
	if o.d.live[name] != nil {
		l.ns.Unlock()
		return nil, syscall.EEXIST
	}
	sub := l.newDir(mode, uid, gid)
	o.d.addLive(name, sub)
	sub.fill(&out.Attr)
	l.ns.Unlock()
	return o.child(ctx, sub), 0
}

func (o *dirOps) Unlink(ctx context.Context, name string) syscall.Errno {
	l := o.d.l
	if l.crashed.Load() {
		return syscall.EIO
	}
	l.ns.Lock()
	defer l.ns.Unlock()
	switch o.d.live[name].(type) {
	case nil:
		return syscall.ENOENT
	case *dirNode:
		return syscall.EISDIR
	}
	f := o.d.live[name].(*fileNode)
	o.d.removeLive(name)
	l.forgetLocked(f)
	return 0
}

func (o *dirOps) Rmdir(ctx context.Context, name string) syscall.Errno {
	l := o.d.l
	if l.crashed.Load() {
		return syscall.EIO
	}
	l.ns.Lock()
	defer l.ns.Unlock()
	sub, ok := o.d.live[name].(*dirNode)
	switch {
	case o.d.live[name] == nil:
		return syscall.ENOENT
	case !ok:
		return syscall.ENOTDIR
	case len(sub.live) > 0:
		return syscall.ENOTEMPTY
	}
	o.d.removeLive(name)
	sub.removed = true
	return 0
}

func (o *dirOps) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	l := o.d.l
	if l.crashed.Load() {
		return syscall.EIO
	}
	dst, ok := newParent.(*dirOps)
	if !ok {
		return syscall.EXDEV
	}
	l.ns.Lock()
	defer l.ns.Unlock()
	return l.rename(o.d, name, dst.d, newName, flags)
}

func (o *dirOps) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	l := o.d.l
	if l.crashed.Load() {
		return nil, syscall.EIO
	}
	t, ok := target.(*fileOps)
	if !ok {
		return nil, syscall.EPERM
	}
	l.ns.Lock()
	if o.d.live[name] != nil {
		l.ns.Unlock()
		return nil, syscall.EEXIST
	}
	o.d.addLive(name, t.f)
	l.ns.Unlock()
	l.attr(t.f, &out.Attr)
	return o.child(ctx, t.f), 0
}

// Fsync of a directory: its entries become durable (and, under the Lenient
// rule, its own entry in its parent).
func (o *dirOps) Fsync(ctx context.Context, _ fs.FileHandle, flags uint32) syscall.Errno {
	l := o.d.l
	l.dirFsyncs.Add(1)
	l.syncDelay()
	l.ns.Lock()
	defer l.ns.Unlock()
	if l.opts.Dirs == Lenient {
		if err := l.applySelf(o.d); err != nil {
			return errno(err)
		}
	}
	return errno(l.applyDir(o.d))
}

func (o *dirOps) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var st syscall.Statfs_t
	if err := syscall.Statfs(o.d.l.backing, &st); err != nil {
		return errno(err)
	}
	out.FromStatfsT(&st)
	return 0
}

// ---- files ----

// usable reports whether f can serve a request; under f.mu.
func (f *fileNode) usable() bool { return !f.l.crashed.Load() && f.obj != nil }

func (o *fileOps) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	f := o.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.usable() {
		return nil, 0, syscall.EIO
	}
	if flags&syscall.O_TRUNC != 0 && flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		f.truncateLocked(0)
		f.mtime = time.Now()
	}
	f.handles.Add(1)
	// The kernel's page cache stays valid across opens: every change goes
	// through it.
	return &handle{}, fuse.FOPEN_KEEP_CACHE, 0
}

func (o *fileOps) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	o.f.l.attr(o.f, &out.Attr)
	return 0
}

func (o *fileOps) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	f := o.f
	f.mu.Lock()
	if !f.usable() {
		f.mu.Unlock()
		return syscall.EIO
	}
	now := time.Now()
	if sz, ok := in.GetSize(); ok {
		f.truncateLocked(int64(sz))
		f.mtime = now
	}
	if m, ok := in.GetMode(); ok {
		f.mode = m & 0o7777
		f.modeDirty = true
	}
	if u, ok := in.GetUID(); ok {
		f.uid = u
	}
	if g, ok := in.GetGID(); ok {
		f.gid = g
	}
	if t, ok := in.GetATime(); ok {
		f.atime = t
	}
	if t, ok := in.GetMTime(); ok {
		f.mtime = t
	}
	f.ctime = now
	f.mu.Unlock()
	f.l.attr(f, &out.Attr)
	return 0
}

func (o *fileOps) Read(ctx context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f := o.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.usable() {
		return nil, syscall.EIO
	}
	if off >= f.size {
		return fuse.ReadResultData(nil), 0
	}
	n := min(int64(len(dest)), f.size-off)
	if err := f.readLocked(dest[:n], off); err != nil {
		return nil, errno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (o *fileOps) Write(ctx context.Context, _ fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	f := o.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.usable() {
		return 0, syscall.EIO
	}
	f.l.writes.Add(1)
	f.l.writeBytes.Add(int64(len(data)))
	if err := f.writeLocked(data, off); err != nil {
		return 0, errno(err)
	}
	f.mtime = time.Now()
	return uint32(len(data)), 0
}

func (o *fileOps) Writev(ctx context.Context, fh fs.FileHandle, data [][]byte, off int64) (uint32, syscall.Errno) {
	var all []byte
	for _, d := range data {
		all = append(all, d...)
	}
	return o.Write(ctx, fh, all, off)
}

// Fsync of a file (fsync, fdatasync, msync): its data and size become
// durable, and under the Lenient rule every entry naming it.
func (o *fileOps) Fsync(ctx context.Context, _ fs.FileHandle, flags uint32) syscall.Errno {
	f := o.f
	l := f.l
	l.fsyncs.Add(1)
	l.syncDelay()
	f.mu.Lock()
	err := f.syncLocked()
	f.mu.Unlock()
	if err != nil {
		return errno(err)
	}
	if l.opts.Dirs == Lenient {
		l.ns.Lock()
		err = l.applySelf(f)
		l.ns.Unlock()
	}
	return errno(err)
}

// Flush (every close) persists nothing.
func (o *fileOps) Flush(ctx context.Context, _ fs.FileHandle) syscall.Errno { return 0 }

// Release is the last close of an open file (its mappings included); a
// file that has no name left is then forgotten.
func (o *fileOps) Release(ctx context.Context, _ fs.FileHandle) syscall.Errno {
	f := o.f
	forgot := false
	if f.handles.Add(-1) == 0 {
		f.l.ns.Lock()
		forgot = f.l.forgetLocked(f)
		f.l.ns.Unlock()
	}
	f.l.TestSignals.Released.Signal(forgot)
	return 0
}

func (o *fileOps) Allocate(ctx context.Context, _ fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	f := o.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.usable() {
		return syscall.EIO
	}
	const keepSize = 1 // FALLOC_FL_KEEP_SIZE
	switch mode {
	case keepSize:
		return 0
	case 0:
		if end := int64(off + size); end > f.size {
			f.truncateLocked(end)
		}
		return 0
	}
	return syscall.EOPNOTSUPP
}

// syncDelay waits Options.SyncLatency, before the sync takes effect: a crash
// meanwhile loses what the sync would have kept.
func (l *FS) syncDelay() {
	if l.opts.SyncLatency > 0 {
		time.Sleep(l.opts.SyncLatency)
	}
}
