package kv

import (
	"bytes"
	"errors"

	"github.com/dgraph-io/badger/v4"
)

// badgerReader reads one Badger snapshot.
type badgerReader struct{ txn *badger.Txn }

func (r badgerReader) get(key []byte) ([]byte, bool, error) {
	item, err := r.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v, err := item.ValueCopy(nil)
	return v, err == nil, err
}

func (r badgerReader) has(key []byte) (bool, error) {
	_, err := r.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (r badgerReader) discard() { r.txn.Discard() }

func (r badgerReader) scan(prefix, after []byte, reverse, withValues bool) cursor {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	opts.Reverse = reverse
	opts.PrefetchValues = withValues
	if withValues {
		opts.PrefetchSize = 16
		if len(prefix) == 0 {
			opts.PrefetchSize = 64 // a whole-store walk (Snapshot)
		}
	}
	it := r.txn.NewIterator(opts)
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
	return badgerCursor{it: it, prefix: prefix}
}

// badgerCursor is a Badger iterator, which skips deleted and expired keys.
type badgerCursor struct {
	it     *badger.Iterator
	prefix []byte
}

func (c badgerCursor) valid() bool            { return c.it.ValidForPrefix(c.prefix) }
func (c badgerCursor) key() []byte            { return c.it.Item().Key() }
func (c badgerCursor) value() ([]byte, error) { return c.it.Item().ValueCopy(nil) }
func (c badgerCursor) expiresAt() uint64      { return c.it.Item().ExpiresAt() }
func (c badgerCursor) next()                  { c.it.Next() }
func (c badgerCursor) err() error             { return nil }
func (c badgerCursor) close()                 { c.it.Close() }
