package graph

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Tx is one transaction: read-only from View, read-write inside Update. The
// domain methods (NodeGet, NodeCreate, EdgeInsert, ...) are the only way other
// packages touch keys.
type Tx struct {
	btx      *badger.Txn
	store    *Store
	now      time.Time
	writable bool

	seqs     map[string]uint64 // next event seq per tenant, applied on commit
	events   []Event
	onCommit []func()
}

// Now is the instant this transaction acts at.
func (tx *Tx) Now() time.Time { return tx.now }

// OnCommit registers f to run on the writer goroutine right after this
// transaction commits (never if it does not).
func (tx *Tx) OnCommit(f func()) { tx.onCommit = append(tx.onCommit, f) }

var errReadOnly = errors.New("write in a read-only transaction")

func (tx *Tx) get(key []byte) ([]byte, bool, error) {
	item, err := tx.btx.Get(key)
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
	if !tx.writable {
		return errReadOnly
	}
	return tx.btx.Set(key, val)
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
	return tx.btx.Delete(key)
}

func (tx *Tx) exists(key []byte) (bool, error) {
	_, err := tx.btx.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// scan calls fn for each key with prefix, in order (or reverse order), starting
// strictly after `after` when it is non-nil. fn returns false to stop.
func (tx *Tx) scan(prefix, after []byte, reverse, withValues bool, fn func(key, val []byte) (bool, error)) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	opts.Reverse = reverse
	opts.PrefetchValues = withValues
	if withValues {
		opts.PrefetchSize = 16
	}
	it := tx.btx.NewIterator(opts)
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
	for ; it.ValidForPrefix(prefix); it.Next() {
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
	}
	return nil
}

func putU64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
