package kv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// durable commits a group to etcd, in order: consecutive segments that fit
// one transaction together are one guarded transaction (durable and applied
// at once); a segment too large for one goes through the commit log
// (etcd_log.go). Each segment is marked done once etcd holds it.
func (e *etcdEngine) durable(group []*inflight) error {
	start := time.Now()
	var keys, bytes int64
	for i := 0; i < len(group); {
		f := group[i]
		keys += int64(f.over.len())
		for k, v := range f.over.vals {
			bytes += int64(len(k) + len(v.val))
		}
		if !e.fits(f.over.len(), f.over.size) {
			if err := e.logged(f.over); err != nil {
				return err
			}
			f.done.Store(true)
			i++
			continue
		}
		merged, n, size := f.over, f.over.len(), f.over.size
		j := i + 1
		for ; j < len(group) && e.fits(n+group[j].over.len(), size+group[j].over.size); j++ {
			g := group[j]
			if merged == f.over {
				merged = newOverlay()
				merged.absorb(f.over)
			}
			merged.absorb(g.over)
			n, size = n+g.over.len(), size+g.over.size
			keys += int64(g.over.len())
			for k, v := range g.over.vals {
				bytes += int64(len(k) + len(v.val))
			}
		}
		if merged.len() > 0 {
			ops, err := e.ops(merged)
			if err != nil {
				return err
			}
			if err := e.commitOps(ops); err != nil {
				return err
			}
			e.s.stats.Batches.Add(1)
		}
		for _, g := range group[i:j] {
			g.done.Store(true)
		}
		i = j
	}
	st := &e.s.stats
	st.Syncs.Add(1)
	st.SyncNanos.Add(time.Since(start).Nanoseconds())
	st.Keys.Add(keys)
	st.Bytes.Add(bytes)
	return nil
}

// apply has nothing to do: durable applied every segment.
func (e *etcdEngine) apply([]*inflight) error { return nil }

// fits reports whether n writes of about size bytes (the overlay's estimate)
// fit one transaction.
func (e *etcdEngine) fits(n int, size int64) bool {
	return n <= e.txnOps && size+int64(n)*int64(len(e.data)+16) <= int64(e.maxBytes)
}

// ops are the puts and deletes of an overlay, each TTL key on the lease of
// its expiry bucket.
func (e *etcdEngine) ops(o *overlay) ([]clientv3.Op, error) {
	ops := make([]clientv3.Op, 0, o.len())
	for k, v := range o.vals {
		op, err := e.op(k, v)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func (e *etcdEngine) op(k string, v value) (clientv3.Op, error) {
	if v.deleted {
		return clientv3.OpDelete(e.data + k), nil
	}
	if v.expiresAt == 0 {
		// A put without a lease detaches the one a TTL write attached.
		return clientv3.OpPut(e.data+k, string(envelope(v))), nil
	}
	id, err := e.lease(v.expiresAt)
	if err != nil {
		return clientv3.Op{}, err
	}
	return clientv3.OpPut(e.data+k, string(envelope(v)), clientv3.WithLease(id)), nil
}

// A value in etcd is an envelope: one byte 0 and the value, or one byte 1,
// the expiry (unix seconds, big-endian u64) and the value. Reads leave out
// expired keys, as Badger does; etcd deletes them too, with the lease of
// their expiry bucket, a minute or two later.
func envelope(v value) []byte {
	if v.expiresAt == 0 {
		out := make([]byte, 1+len(v.val))
		copy(out[1:], v.val)
		return out
	}
	out := make([]byte, 9+len(v.val))
	out[0] = 1
	binary.BigEndian.PutUint64(out[1:], v.expiresAt)
	copy(out[9:], v.val)
	return out
}

var errBadEnvelope = errors.New("a value in etcd is not one of the store's")

// unwrap reads an envelope: the value and its expiry.
func unwrap(b []byte) ([]byte, uint64, error) {
	switch {
	case len(b) >= 1 && b[0] == 0:
		return b[1:], 0, nil
	case len(b) >= 9 && b[0] == 1:
		return b[9:], binary.BigEndian.Uint64(b[1:]), nil
	}
	return nil, 0, errBadEnvelope
}

// expired reports whether a key with this expiry is gone at now.
func expired(expiresAt uint64, now time.Time) bool {
	return expiresAt != 0 && expiresAt <= uint64(now.Unix())
}

// leaseCache holds one etcd lease per expiry bucket (a minute): a key that
// expires in the bucket is put with its lease, which ends a bucket's width
// after the bucket, so etcd deletes the key some time after it expired.
type leaseCache struct {
	mu sync.Mutex
	m  map[uint64]leaseEntry
}

type leaseEntry struct {
	id  clientv3.LeaseID
	end time.Time
}

func (e *etcdEngine) lease(expiresAt uint64) (clientv3.LeaseID, error) {
	width := uint64(e.bucket)
	bucket := (expiresAt + width - 1) / width * width
	now := time.Now()
	c := &e.leases
	c.mu.Lock()
	defer c.mu.Unlock()
	// A lease near its end is not given to another key: it could be gone
	// before the transaction that names it commits.
	if le, ok := c.m[bucket]; ok && le.end.Sub(now) > time.Duration(e.bucket)*time.Second/2 {
		return le.id, nil
	}
	ttl := max(int64(bucket)-now.Unix()+e.bucket, e.bucket/2+1)
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := e.cli.Grant(ctx, ttl)
	if err != nil {
		return 0, fmt.Errorf("error granting an etcd lease: %w", err)
	}
	if c.m == nil {
		c.m = map[uint64]leaseEntry{}
	}
	for b, le := range c.m {
		if le.end.Before(now) {
			delete(c.m, b)
		}
	}
	c.m[bucket] = leaseEntry{id: resp.ID, end: now.Add(time.Duration(resp.TTL) * time.Second)}
	return resp.ID, nil
}
