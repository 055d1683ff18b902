package kv

import (
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdPage is how many keys one range read of a scan takes.
const etcdPage = 256

// etcdReader reads the store in etcd: linearizable reads, all at the
// revision of its first one (so a View sees one state, as with Badger's
// snapshot). The writer and View shadow what is in flight with overlays.
type etcdReader struct {
	e   *etcdEngine
	rev atomic.Int64 // 0 until the first read
}

func (e *etcdEngine) reader() reader { return &etcdReader{e: e} }

// snapshotReader fixes the reader's revision now.
func (e *etcdEngine) snapshotReader() (reader, error) {
	r := &etcdReader{e: e}
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := e.cli.Get(ctx, e.data, clientv3.WithCountOnly())
	if err != nil {
		return nil, err
	}
	r.rev.Store(resp.Header.Revision)
	return r, nil
}

// range reads [key, end) at the reader's revision (fixing it on the first).
func (r *etcdReader) get(key []byte) ([]byte, bool, error) {
	kvs, _, err := r.read(r.e.data+string(key), "", false, 0)
	if err != nil || len(kvs) == 0 {
		return nil, false, err
	}
	val, exp, err := unwrap(kvs[0].Value)
	if err != nil || expired(exp, time.Now()) {
		return nil, false, err
	}
	return val, true, nil
}

func (r *etcdReader) has(key []byte) (bool, error) {
	_, ok, err := r.get(key)
	return ok, err
}

func (r *etcdReader) discard() {}

// read is one range read at the reader's revision.
func (r *etcdReader) read(key, end string, descend bool, limit int64) ([]*mvccpb.KeyValue, bool, error) {
	opts := make([]clientv3.OpOption, 0, 4)
	if end != "" {
		opts = append(opts, clientv3.WithRange(end), clientv3.WithLimit(limit))
		if descend {
			opts = append(opts, clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
		}
	}
	rev := r.rev.Load()
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	ctx, cancel := r.e.ctx()
	defer cancel()
	resp, err := r.e.cli.Get(ctx, key, opts...)
	if err != nil {
		return nil, false, err
	}
	if rev == 0 {
		r.rev.CompareAndSwap(0, resp.Header.Revision)
	}
	return resp.Kvs, resp.More, nil
}

func (r *etcdReader) scan(prefix, after []byte, reverse, withValues bool) cursor {
	lo := r.e.data + string(prefix)
	hi := clientv3.GetPrefixRangeEnd(lo)
	if after != nil {
		a := r.e.data + string(after)
		if reverse {
			hi = min(hi, a)
		} else {
			lo = max(lo, a+"\x00")
		}
	}
	c := &etcdCursor{r: r, lo: lo, hi: hi, reverse: reverse, now: time.Now()}
	c.fill()
	return c
}

// etcdCursor walks a range a page at a time. Values are always read: a
// key's expiry is in its value.
type etcdCursor struct {
	r       *etcdReader
	lo, hi  string // what is left to read: [lo, hi)
	reverse bool
	now     time.Time
	page    []*mvccpb.KeyValue
	more    bool
	i       int
	val     []byte
	exp     uint64
	failed  error
}

// fill moves to the next live key, reading pages as needed.
func (c *etcdCursor) fill() {
	for {
		for ; c.i < len(c.page); c.i++ {
			val, exp, err := unwrap(c.page[c.i].Value)
			if err != nil {
				c.failed, c.page = err, nil
				return
			}
			if !expired(exp, c.now) {
				c.val, c.exp = val, exp
				return
			}
		}
		if c.page != nil && !c.more || c.lo >= c.hi {
			c.page = nil
			return
		}
		kvs, more, err := c.r.read(c.lo, c.hi, c.reverse, etcdPage)
		if err != nil {
			c.failed, c.page = err, nil
			return
		}
		c.page, c.more, c.i = kvs, more, 0
		if len(kvs) == 0 {
			c.page = nil
			return
		}
		last := string(kvs[len(kvs)-1].Key)
		if c.reverse {
			c.hi = last
		} else {
			c.lo = last + "\x00"
		}
	}
}

func (c *etcdCursor) valid() bool { return c.i < len(c.page) }
func (c *etcdCursor) key() []byte { return c.page[c.i].Key[len(c.r.e.data):] }
func (c *etcdCursor) value() ([]byte, error) {
	return c.val, nil
}
func (c *etcdCursor) expiresAt() uint64 { return c.exp }
func (c *etcdCursor) next()             { c.i++; c.fill() }
func (c *etcdCursor) err() error        { return c.failed }
func (c *etcdCursor) close()            {}
