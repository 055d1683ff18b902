package kv

import (
	"bytes"
	"errors"
	"slices"
	"time"

	"github.com/tether-run/tether/internal/fault"
)

// Txn is one transaction: read-only from View, read-write inside Update.
//
// A write transaction writes straight into the writer's current segment,
// keeping an undo log to take its writes back out if it fails; it reads the
// segment (its own writes and those of the transactions before it in the
// segment), then the segments in flight, then the engine's committed state
// (see writer.go).
type Txn struct {
	eng  engine      // View: where its snapshot comes from
	snap reader      // View: the read snapshot, opened on first use
	vis  []*inflight // View: durable writes not yet in the snapshot, oldest first
	// View: segments not yet durable whose shown writes it reads (shown.go),
	// oldest first; each newer than every segment of vis.
	early []*inflight
	w     *segment // Update: the segment this transaction writes into

	id        uint64      // Update: marks the segment's values this transaction wrote
	undo      []undoEntry // Update: how to take this transaction's writes back out, a key each
	size      int64       // bytes this transaction wrote (estimated)
	onApply   []func()
	onDurable []func()
}

// ErrReadOnly is a write in a read-only transaction.
var ErrReadOnly = errors.New("write in a read-only transaction")

// errValueTooLarge is a value larger than the engine takes for one key.
var errValueTooLarge = fault.Invalidf("", "a value is too large for the store")

// Writable reports whether this is a write transaction (on the writer).
func (t *Txn) Writable() bool { return t.w != nil }

// OnApply registers f to run on the writer right after this transaction
// succeeds (never if it does not), before the next transaction runs.
func (t *Txn) OnApply(f func()) { t.onApply = append(t.onApply, f) }

// OnDurable registers f to run once this transaction is durable, after the
// OnDurable hooks of every transaction applied before it.
func (t *Txn) OnDurable(f func()) { t.onDurable = append(t.onDurable, f) }

// undoEntry is what a key held in the segment before this transaction
// wrote it.
type undoEntry struct {
	key  string
	prev value
	had  bool
}

// write puts a key into the segment, remembering what it replaced the first
// time this transaction writes it (a value in the segment carries the id of
// the transaction that wrote it last, so no set of written keys is kept).
func (t *Txn) write(key string, v value) {
	prev, had := t.w.over.vals[key]
	if !had || prev.txn != t.id {
		t.undo = append(t.undo, undoEntry{key: key, prev: prev, had: had})
	}
	t.size += int64(len(key)+len(v.val)) + 24
	v.txn = t.id
	t.w.over.putOver(key, v, prev, had)
}

// rollback takes this transaction's writes back out of the segment.
func (t *Txn) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		u := t.undo[i]
		if u.had {
			t.w.over.put(u.key, u.prev)
		} else {
			t.w.over.remove(u.key)
		}
	}
	clear(t.undo)
	t.undo = t.undo[:0]
}

// pending finds key among writes not yet in the engine's snapshot: in a
// write, the segment and the segments in flight; in a View, the writes
// shown before they are durable, then the durable segments the engine does
// not hold yet.
func (t *Txn) pending(key string) (value, bool) {
	if t.w == nil {
		for i := len(t.early) - 1; i >= 0; i-- {
			if v, ok := t.early[i].shown.get(key); ok {
				return v, true
			}
		}
		for i := len(t.vis) - 1; i >= 0; i-- {
			if v, ok := t.vis[i].over.vals[key]; ok {
				return v, true
			}
		}
		return value{}, false
	}
	return t.w.lookup(key)
}

// Wrote reports whether this transaction has written key.
func (t *Txn) Wrote(key []byte) bool {
	if t.w == nil {
		return false
	}
	v, ok := t.w.over.vals[string(key)]
	return ok && v.txn == t.id
}

func (t *Txn) reader() (reader, error) {
	if t.w != nil {
		return t.w.snapshot()
	}
	if t.snap == nil {
		t.snap = t.eng.reader()
	}
	return t.snap, nil
}

// Get returns the value of key; false when it does not exist.
func (t *Txn) Get(key []byte) ([]byte, bool, error) {
	if v, ok := t.pending(string(key)); ok {
		if v.deleted {
			return nil, false, nil
		}
		return v.val, true, nil
	}
	r, err := t.reader()
	if err != nil {
		return nil, false, err
	}
	return r.get(key)
}

// Has reports whether key exists.
func (t *Txn) Has(key []byte) (bool, error) {
	if v, ok := t.pending(string(key)); ok {
		return !v.deleted, nil
	}
	r, err := t.reader()
	if err != nil {
		return false, err
	}
	return r.has(key)
}

// Set writes key. The value must not be changed afterwards.
func (t *Txn) Set(key, val []byte) error {
	if t.w == nil {
		return ErrReadOnly
	}
	if int64(len(val)) > t.w.s.maxValue {
		return errValueTooLarge
	}
	t.write(string(key), value{val: val})
	return nil
}

// SetTTL writes key so that it disappears once ttl has passed on the wall
// clock (unless written again).
func (t *Txn) SetTTL(key, val []byte, ttl time.Duration) error {
	if t.w == nil {
		return ErrReadOnly
	}
	if int64(len(val)) > t.w.s.maxValue {
		return errValueTooLarge
	}
	t.write(string(key), value{val: val, expiresAt: uint64(time.Now().Add(ttl).Unix())})
	return nil
}

// Delete removes key.
func (t *Txn) Delete(key []byte) error {
	if t.w == nil {
		return ErrReadOnly
	}
	t.write(string(key), value{deleted: true})
	return nil
}

// Scan calls fn for each key with prefix, in order (or reverse order),
// starting strictly after `after` when it is non-nil. fn returns false to
// stop. In a write transaction the writes not yet in the snapshot are merged
// in, the newest winning. key and val belong to fn.
func (t *Txn) Scan(prefix, after []byte, reverse, withValues bool, fn func(key, val []byte) (bool, error)) error {
	return t.scan(prefix, after, reverse, withValues, func(key, val []byte, _ uint64) (bool, error) { return fn(key, val) })
}

// scan is Scan that also hands fn each key's expiry (unix seconds, 0 for
// none).
func (t *Txn) scan(prefix, after []byte, reverse, withValues bool, fn func(key, val []byte, expiresAt uint64) (bool, error)) error {
	pending := t.pendingUnder(prefix, after, reverse)
	r, err := t.reader()
	if err != nil {
		return err
	}
	it := r.scan(prefix, after, reverse, withValues)
	defer it.close()
	for {
		valid := it.valid()
		if len(pending) > 0 {
			k := pending[0]
			cmp := 1 // the pending key comes first unless the iterator's does
			if valid {
				cmp = bytes.Compare(it.key(), []byte(k))
				if reverse {
					cmp = -cmp
				}
			}
			if cmp >= 0 {
				pending = pending[1:]
				if cmp == 0 {
					it.next() // shadowed by the pending write
				}
				v, _ := t.pending(k)
				if v.deleted {
					continue
				}
				more, err := fn([]byte(k), bytes.Clone(v.val), v.expiresAt)
				if err != nil || !more {
					return err
				}
				continue
			}
		}
		if !valid {
			return it.err()
		}
		var val []byte
		if withValues {
			v, err := it.value()
			if err != nil {
				return err
			}
			val = v
		}
		more, err := fn(bytes.Clone(it.key()), val, it.expiresAt())
		if err != nil || !more {
			return err
		}
		it.next()
	}
}

// pendingUnder lists the keys under prefix written and not yet in the
// snapshot (strictly after `after`), in scan order.
func (t *Txn) pendingUnder(prefix, after []byte, reverse bool) []string {
	var out []string
	if t.w == nil {
		for _, f := range t.vis {
			out = append(out, f.over.under(string(prefix))...)
		}
		for _, f := range t.early {
			out = append(out, f.shown.under(string(prefix))...)
		}
	} else {
		out = t.w.under(string(prefix))
	}
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if after != nil {
		a := string(after)
		kept := out[:0]
		for _, k := range out {
			if (!reverse && k > a) || (reverse && k < a) {
				kept = append(kept, k)
			}
		}
		out = kept
	}
	if reverse {
		slices.Reverse(out)
	}
	return out
}
