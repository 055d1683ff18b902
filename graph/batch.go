package graph

import (
	"errors"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/btree"
)

// overlay is an ordered set of written keys with their values (or deletions).
type overlay struct {
	vals map[string]overlayValue
	keys *btree.BTreeG[string]
}

type overlayValue struct {
	entry   *badger.Entry // nil when deleted
	deleted bool
}

func newOverlay() *overlay {
	return &overlay{vals: map[string]overlayValue{}, keys: btree.NewG(32, func(a, b string) bool { return a < b })}
}

func (o *overlay) put(k string, v overlayValue) {
	if _, ok := o.vals[k]; !ok {
		o.keys.ReplaceOrInsert(k)
	}
	o.vals[k] = v
}

// under lists the keys with prefix p in order.
func (o *overlay) under(p string) []string {
	if o.keys.Len() == 0 {
		return nil
	}
	var out []string
	o.keys.AscendGreaterOrEqual(p, func(k string) bool {
		if !strings.HasPrefix(k, p) {
			return false
		}
		out = append(out, k)
		return true
	})
	return out
}

// batchTx is one batch of the writer: a snapshot to read from, the writes of
// the transactions that succeeded so far (visible to the later ones), and the
// one Badger transaction that commits them all.
type batchTx struct {
	s     *Store
	snap  *badger.Txn
	wtx   *badger.Txn
	over  *overlay
	count int64 // entries in wtx
	size  int64 // their estimated size
}

func newBatchTx(s *Store) *batchTx {
	return &batchTx{s: s, snap: s.db.NewTransaction(false), wtx: s.db.NewTransaction(true), over: newOverlay()}
}

// tx opens a layer for one closure.
func (b *batchTx) tx() *Tx {
	return &Tx{batch: b, store: b.s, now: b.s.clock.Now(), writable: true, layer: newOverlay()}
}

// errTooLarge is a single transaction larger than Badger takes at once.
var errTooLarge = errors.New("the change is too large for one transaction")

// absorb folds a succeeded layer into the batch. When the layer would not
// fit in the Badger transaction, what the batch holds so far is committed
// first (never part of a layer: a layer goes in whole or not at all).
func (b *batchTx) absorb(tx *Tx) error {
	var count, size int64
	for k, v := range tx.layer.vals {
		count++
		size += int64(len(k)) + 24 // key, meta and version overhead
		if v.entry != nil {
			size += int64(len(v.entry.Value))
		}
	}
	maxCount, maxSize := b.s.db.MaxBatchCount()*8/10, b.s.db.MaxBatchSize()*8/10
	if count > maxCount || size > maxSize {
		return errTooLarge
	}
	if b.count+count > maxCount || b.size+size > maxSize {
		if err := b.wtx.Commit(); err != nil {
			return err
		}
		b.wtx = b.s.db.NewTransaction(true)
		b.count, b.size = 0, 0
	}
	for k, v := range tx.layer.vals {
		var err error
		if v.deleted {
			err = b.wtx.Delete([]byte(k))
		} else {
			err = b.wtx.SetEntry(v.entry)
		}
		if err != nil {
			return err
		}
		b.over.put(k, v)
	}
	b.count += count
	b.size += size
	return nil
}

// commit writes the batch.
func (b *batchTx) commit() error { return b.wtx.Commit() }

func (b *batchTx) discard() {
	b.wtx.Discard()
	b.snap.Discard()
}
