package graph

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Tx is one transaction: read-only from View, read-write inside Update. The
// domain methods (NodeGet, NodeCreate, EdgeInsert, ...) are the only way other
// packages touch keys.
//
// A write transaction is one layer of the writer's current batch: it reads its
// own writes, then the writes of the batch's earlier transactions, then a
// snapshot taken when the batch began; its writes stay in its layer until it
// succeeds, when the batch folds them into the one Badger transaction it
// commits (see batch.go). Every read is O(log n): Badger's own transactions
// sort their pending writes each time an iterator opens, which made large
// transactions quadratic.
type Tx struct {
	rtx      *badger.Txn // View: the read txn
	batch    *batchTx    // Update: the batch this transaction is a layer of
	store    *Store
	now      time.Time
	writable bool
	layer    *overlay

	seqs     map[string]uint64 // next event seq per tenant, applied on success
	events   []Event
	onCommit []func()
}

// Now is the instant this transaction acts at.
func (tx *Tx) Now() time.Time { return tx.now }

// OnCommit registers f to run on the writer goroutine right after this
// transaction succeeds (never if it does not).
func (tx *Tx) OnCommit(f func()) { tx.onCommit = append(tx.onCommit, f) }

var errReadOnly = errors.New("write in a read-only transaction")

// reader is the Badger transaction reads fall through to.
func (tx *Tx) reader() *badger.Txn {
	if tx.batch != nil {
		return tx.batch.snap
	}
	return tx.rtx
}

// lookup finds key in this transaction's layer or the batch's overlay.
func (tx *Tx) lookup(key string) (overlayValue, bool) {
	if tx.layer != nil {
		if ov, ok := tx.layer.vals[key]; ok {
			return ov, true
		}
	}
	if tx.batch != nil {
		if ov, ok := tx.batch.over.vals[key]; ok {
			return ov, true
		}
	}
	return overlayValue{}, false
}

func (tx *Tx) get(key []byte) ([]byte, bool, error) {
	if ov, ok := tx.lookup(string(key)); ok {
		if ov.deleted {
			return nil, false, nil
		}
		return ov.entry.Value, true, nil
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

func (tx *Tx) set(key, val []byte) error {
	return tx.setEntry(badger.NewEntry(key, val))
}

func (tx *Tx) setEntry(e *badger.Entry) error {
	if !tx.writable {
		return errReadOnly
	}
	tx.layer.put(string(e.Key), overlayValue{entry: e})
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
	tx.layer.put(string(key), overlayValue{deleted: true})
	return nil
}

func (tx *Tx) exists(key []byte) (bool, error) {
	if ov, ok := tx.lookup(string(key)); ok {
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
				ov, _ := tx.lookup(k)
				if ov.deleted {
					continue
				}
				more, err := fn([]byte(k), bytes.Clone(ov.entry.Value))
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

// pendingUnder lists the keys written under prefix by this transaction and
// the batch's earlier ones (strictly after `after`), in scan order.
func (tx *Tx) pendingUnder(prefix, after []byte, reverse bool) []string {
	var out []string
	if tx.batch != nil {
		out = tx.batch.over.under(string(prefix))
	}
	if tx.layer != nil {
		if mine := tx.layer.under(string(prefix)); len(mine) > 0 {
			out = append(out, mine...)
			slices.Sort(out)
			out = slices.Compact(out)
		}
	}
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
