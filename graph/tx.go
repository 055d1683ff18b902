package graph

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/btree"
)

// Tx is one transaction: read-only from View, read-write inside Update. The
// domain methods (NodeGet, NodeCreate, EdgeInsert, ...) are the only way other
// packages touch keys.
//
// A write transaction reads from a snapshot taken when it starts plus an
// ordered overlay of its own writes; the Badger write transaction only
// receives the writes. Badger sorts a transaction's pending writes every time
// an iterator is opened in it, which makes a transaction that writes
// thousands of keys and scans between them quadratic; the overlay keeps every
// read O(log n).
type Tx struct {
	btx      *badger.Txn // View: the read txn; Update: the write txn (writes only)
	snap     *badger.Txn // Update: the snapshot reads come from
	store    *Store
	now      time.Time
	writable bool
	over     map[string]overlayValue
	overKeys *btree.BTreeG[string]

	seqs     map[string]uint64 // next event seq per tenant, applied on commit
	events   []Event
	onCommit []func()
}

type overlayValue struct {
	val     []byte
	deleted bool
}

func newWriteTx(s *Store) *Tx {
	return &Tx{
		btx: s.db.NewTransaction(true), snap: s.db.NewTransaction(false), store: s,
		now: s.clock.Now(), writable: true,
		over: map[string]overlayValue{}, overKeys: btree.NewG(32, func(a, b string) bool { return a < b }),
	}
}

func (tx *Tx) discard() {
	tx.btx.Discard()
	if tx.snap != nil {
		tx.snap.Discard()
	}
}

// reader is the Badger transaction reads go to.
func (tx *Tx) reader() *badger.Txn {
	if tx.snap != nil {
		return tx.snap
	}
	return tx.btx
}

// Now is the instant this transaction acts at.
func (tx *Tx) Now() time.Time { return tx.now }

// OnCommit registers f to run on the writer goroutine right after this
// transaction commits (never if it does not).
func (tx *Tx) OnCommit(f func()) { tx.onCommit = append(tx.onCommit, f) }

var errReadOnly = errors.New("write in a read-only transaction")

func (tx *Tx) get(key []byte) ([]byte, bool, error) {
	if ov, ok := tx.over[string(key)]; ok {
		if ov.deleted {
			return nil, false, nil
		}
		return ov.val, true, nil
	}
	item, err := tx.reader().Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v, err := item.ValueCopy(nil)
	return v, err == nil, err
}

func (tx *Tx) getJSON(key []byte, v any) (bool, error) {
	b, ok, err := tx.get(key)
	if err != nil || !ok {
		return ok, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("error decoding %q: %w", key, err)
	}
	return true, nil
}

func (tx *Tx) record(key, val []byte, deleted bool) {
	k := string(key)
	if _, ok := tx.over[k]; !ok {
		tx.overKeys.ReplaceOrInsert(k)
	}
	tx.over[k] = overlayValue{val: val, deleted: deleted}
}

func (tx *Tx) set(key, val []byte) error {
	return tx.setEntry(badger.NewEntry(key, val))
}

func (tx *Tx) setEntry(e *badger.Entry) error {
	if !tx.writable {
		return errReadOnly
	}
	if err := tx.btx.SetEntry(e); err != nil {
		return err
	}
	tx.record(e.Key, e.Value, false)
	return nil
}

func (tx *Tx) setJSON(key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.set(key, b)
}

func (tx *Tx) del(key []byte) error {
	if !tx.writable {
		return errReadOnly
	}
	if err := tx.btx.Delete(key); err != nil {
		return err
	}
	tx.record(key, nil, true)
	return nil
}

func (tx *Tx) exists(key []byte) (bool, error) {
	if ov, ok := tx.over[string(key)]; ok {
		return !ov.deleted, nil
	}
	_, err := tx.reader().Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// scan calls fn for each key with prefix, in order (or reverse order), starting
// strictly after `after` when it is non-nil. fn returns false to stop. In a
// write transaction the snapshot and the overlay are merged, the overlay
// winning.
func (tx *Tx) scan(prefix, after []byte, reverse, withValues bool, fn func(key, val []byte) (bool, error)) error {
	pending := tx.pendingUnder(prefix, after, reverse)
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	opts.Reverse = reverse
	opts.PrefetchValues = withValues
	if withValues {
		opts.PrefetchSize = 16
	}
	it := tx.reader().NewIterator(opts)
	defer it.Close()
	switch {
	case after != nil:
		it.Seek(after)
		if it.ValidForPrefix(prefix) && bytes.Equal(it.Item().Key(), after) {
			it.Next()
		}
	case reverse:
		it.Seek(append(bytes.Clone(prefix), bytes.Repeat([]byte{0xff}, 64)...))
	default:
		it.Seek(prefix)
	}
	for {
		valid := it.ValidForPrefix(prefix)
		if len(pending) > 0 {
			k := pending[0]
			cmp := 1 // the overlay key comes first unless the iterator's does
			if valid {
				cmp = bytes.Compare(it.Item().Key(), []byte(k))
				if reverse {
					cmp = -cmp
				}
			}
			if cmp >= 0 {
				pending = pending[1:]
				if cmp == 0 {
					it.Next() // shadowed by the overlay
				}
				ov := tx.over[k]
				if ov.deleted {
					continue
				}
				more, err := fn([]byte(k), bytes.Clone(ov.val))
				if err != nil || !more {
					return err
				}
				continue
			}
		}
		if !valid {
			return nil
		}
		item := it.Item()
		var val []byte
		if withValues {
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			val = v
		}
		more, err := fn(item.KeyCopy(nil), val)
		if err != nil || !more {
			return err
		}
		it.Next()
	}
}

// pendingUnder lists this transaction's written keys under prefix (strictly
// after `after`), in scan order.
func (tx *Tx) pendingUnder(prefix, after []byte, reverse bool) []string {
	if tx.overKeys == nil || tx.overKeys.Len() == 0 {
		return nil
	}
	var out []string
	lo := string(prefix)
	visit := func(k string) bool {
		if !strings.HasPrefix(k, lo) {
			return false
		}
		out = append(out, k)
		return true
	}
	tx.overKeys.AscendGreaterOrEqual(lo, visit)
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

func putU64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
