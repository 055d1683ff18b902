package graphstore

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// Blobs. The blob package owns the bytes (files beside the store) and what
// an upload means; the graph stores each blob's record (B|t|sha) and keeps,
// derived from the records, how many nodes name each blob (Node.Blobs),
// each tenant's total bytes, and the blobs no node names in the order their
// grace period started. Only UnrefAt needs writing when references change,
// and only when the last one goes: the counts are rebuilt from the node
// records at open.
//
// Node.Blobs changes only through NodeInsert, NodePut and NodeDelete, which
// keep the counts; NodePutQuiet must leave it as it was.

// MaxNodeBlobs is the most blobs one node may reference.
const MaxNodeBlobs = 100

type blobRef struct{ tenant, sha string }

// blobState is what memory keeps of a blob.
type blobState struct {
	size    int64
	refs    int64     // nodes naming it
	unrefAt time.Time // while refs == 0: when its grace period started
}

// orphan is a blob no node names, ordered by when that began.
type orphan struct {
	at  time.Time
	ref blobRef
}

func lessOrphan(a, b orphan) bool {
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	if a.ref.tenant != b.ref.tenant {
		return a.ref.tenant < b.ref.tenant
	}
	return a.ref.sha < b.ref.sha
}

// blobTable is the committed blob state. The writer changes it only in
// apply, under mu; readers take mu for reading.
type blobTable struct {
	mu      sync.RWMutex
	blobs   map[blobRef]*blobState
	usage   map[string]int64 // bytes per tenant
	orphans *btree.BTreeG[orphan]
}

func newBlobTable() *blobTable {
	return &blobTable{blobs: map[blobRef]*blobState{}, usage: map[string]int64{}, orphans: btree.NewG(indexes.BTreeDegree, lessOrphan)}
}

// put makes st the state of ref (nil: gone), keeping usage and orphans.
func (b *blobTable) put(ref blobRef, st *blobState) {
	if old, ok := b.blobs[ref]; ok {
		b.usage[ref.tenant] -= old.size
		if old.refs == 0 {
			b.orphans.Delete(orphan{old.unrefAt, ref})
		}
		delete(b.blobs, ref)
	}
	if b.usage[ref.tenant] == 0 {
		delete(b.usage, ref.tenant)
	}
	if st == nil {
		return
	}
	c := *st
	b.blobs[ref] = &c
	b.usage[ref.tenant] += c.size
	if c.refs == 0 {
		b.orphans.ReplaceOrInsert(orphan{c.unrefAt, ref})
	}
}

// derive fills b from the blob records and refs, the references counted in
// the node records.
func (b *blobTable) derive(ktx *kv.Txn, refs map[blobRef]int64) error {
	return ktx.Scan([]byte{records.TagBlob, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := records.SplitKey(key, 2) // tenant, sha
		if len(parts) != 2 {
			return true, nil
		}
		var r records.BlobRecord
		if err := decode(val, &r, key); err != nil {
			return false, err
		}
		ref := blobRef{indexes.Intern(string(parts[0])), string(parts[1])}
		b.put(ref, &blobState{size: r.Size, refs: refs[ref], unrefAt: r.UnrefAt})
		return true, nil
	})
}

// blob returns the state of a blob as this transaction sees it (nil: none).
// The result is read-only.
func (tx *Tx) blob(ref blobRef) *blobState {
	if st, ok := tx.blobs[ref]; ok {
		return st
	}
	b := tx.store.blobs
	if !tx.writable {
		b.mu.RLock()
		defer b.mu.RUnlock()
	}
	st := b.blobs[ref]
	if st == nil {
		return nil
	}
	if !tx.writable {
		c := *st
		return &c
	}
	return st
}

// mutBlob returns this transaction's own copy of a blob's state to change.
func (tx *Tx) mutBlob(ref blobRef) *blobState {
	if st, ok := tx.blobs[ref]; ok {
		return st
	}
	cur := tx.blob(ref)
	if cur == nil {
		return nil
	}
	c := *cur
	tx.setBlob(ref, &c)
	return &c
}

func (tx *Tx) setBlob(ref blobRef, st *blobState) {
	if tx.blobs == nil {
		tx.blobs = map[blobRef]*blobState{}
	}
	tx.blobs[ref] = st
}

// applyBlobs folds this transaction's blob changes into the table.
func (tx *Tx) applyBlobs() {
	b := tx.store.blobs
	b.mu.Lock()
	defer b.mu.Unlock()
	for ref, st := range tx.blobs {
		b.put(ref, st)
	}
}

// BlobGet returns the record of a blob of tenant, or a fault.NotFound.
func (tx *Tx) BlobGet(tenant, sha string) (*records.BlobRecord, error) {
	var r records.BlobRecord
	ok, err := tx.getRecord(records.BlobKey(tenant, sha), &r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &fault.NotFound{What: "blob", ID: sha}
	}
	return &r, nil
}

// BlobExists reports whether tenant has the blob.
func (tx *Tx) BlobExists(tenant, sha string) bool { return tx.blob(blobRef{tenant, sha}) != nil }

// BlobUsage is the bytes tenant's blobs take, as this transaction sees it.
func (tx *Tx) BlobUsage(tenant string) int64 {
	b := tx.store.blobs
	if !tx.writable {
		b.mu.RLock()
	}
	total := b.usage[tenant]
	for ref, st := range tx.blobs {
		if ref.tenant != tenant {
			continue
		}
		if old := b.blobs[ref]; old != nil {
			total -= old.size
		}
		if st != nil {
			total += st.size
		}
	}
	if !tx.writable {
		b.mu.RUnlock()
	}
	return total
}

// BlobInsert stores the record of a new blob, unreferenced from now on. A
// blob the tenant has already is a fault.AlreadyExists.
func (tx *Tx) BlobInsert(tenant, sha string, r *records.BlobRecord) error {
	if !tx.writable {
		return errReadOnly
	}
	ref := blobRef{tenant, sha}
	if tx.blob(ref) != nil {
		return &fault.AlreadyExists{What: "blob", ID: sha}
	}
	now := tx.now.UTC()
	r.CreatedAt, r.UnrefAt = now, now
	if err := tx.setRecord(records.BlobKey(tenant, sha), r); err != nil {
		return err
	}
	tx.setBlob(ref, &blobState{size: r.Size, unrefAt: now})
	return nil
}

// BlobTouch restarts the grace period of a blob no node names (a repeated
// upload of it); a referenced blob is left as it is. It returns the record.
func (tx *Tx) BlobTouch(tenant, sha string) (*records.BlobRecord, error) {
	if !tx.writable {
		return nil, errReadOnly
	}
	r, err := tx.BlobGet(tenant, sha)
	if err != nil {
		return nil, err
	}
	st := tx.mutBlob(blobRef{tenant, sha})
	if st == nil || st.refs > 0 {
		return r, nil
	}
	r.UnrefAt = tx.now.UTC()
	st.unrefAt = r.UnrefAt
	return r, tx.setRecord(records.BlobKey(tenant, sha), r)
}

// BlobDelete erases a blob's record if no node names it and its grace
// period started no later than unrefBefore; it reports whether it did. The
// caller removes the bytes once the deletion is durable.
func (tx *Tx) BlobDelete(tenant, sha string, unrefBefore time.Time) (bool, error) {
	if !tx.writable {
		return false, errReadOnly
	}
	ref := blobRef{tenant, sha}
	st := tx.blob(ref)
	if st == nil || st.refs > 0 || st.unrefAt.After(unrefBefore) {
		return false, nil
	}
	if err := tx.kv.Delete(records.BlobKey(tenant, sha)); err != nil {
		return false, err
	}
	tx.setBlob(ref, nil)
	return true, nil
}

// BlobID names one blob of one tenant.
type BlobID struct{ Tenant, SHA string }

// BlobIDOfKey names the blob whose record is stored under key; false for a
// key that is no blob record (a backup walks every key).
func BlobIDOfKey(key []byte) (BlobID, bool) {
	if len(key) < 2 || key[0] != records.TagBlob || key[1] != records.KeySeparator {
		return BlobID{}, false
	}
	parts := records.SplitKey(key, 2) // tenant, sha
	if len(parts) != 2 {
		return BlobID{}, false
	}
	return BlobID{string(parts[0]), string(parts[1])}, true
}

// BlobOrphans returns up to limit blobs, of any tenant, that no node names and
// whose grace period started no later than unrefBefore, oldest first. It
// reads the committed state: a caller deletes each through BlobDelete,
// which checks again.
func (s *Store) BlobOrphans(unrefBefore time.Time, limit int) []BlobID {
	b := s.blobs
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []BlobID
	b.orphans.Ascend(func(o orphan) bool {
		if o.at.After(unrefBefore) || len(out) >= limit {
			return false
		}
		out = append(out, BlobID{o.ref.tenant, o.ref.sha})
		return true
	})
	return out
}

// BlobList calls fn with every blob record of every tenant, for start-up
// housekeeping (the blob package matching files to records).
func (s *Store) BlobList(fn func(id BlobID, r *records.BlobRecord) error) error {
	return s.kv.View(func(ktx *kv.Txn) error {
		return ktx.Scan([]byte{records.TagBlob, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
			parts := records.SplitKey(key, 2)
			if len(parts) != 2 {
				return true, nil
			}
			var r records.BlobRecord
			if err := decode(val, &r, key); err != nil {
				return false, err
			}
			return true, fn(BlobID{string(parts[0]), string(parts[1])}, &r)
		})
	})
}

// blobRefs moves the reference counts of tenant's blobs from the list old
// to the list new (each free of repeats). A blob newly named must exist; a
// blob no longer named by any node starts its grace period now.
func (tx *Tx) blobRefs(tenant string, old, new []string) error {
	if len(old) == 0 && len(new) == 0 {
		return nil
	}
	for _, sha := range new {
		if slices.Contains(old, sha) {
			continue
		}
		st := tx.mutBlob(blobRef{tenant, sha})
		if st == nil {
			return fault.Invalidf("blobs", "names %s, which is not a blob of this tenant", sha)
		}
		st.refs++
	}
	for _, sha := range old {
		if slices.Contains(new, sha) {
			continue
		}
		st := tx.mutBlob(blobRef{tenant, sha})
		if st == nil {
			continue // cannot be: a named blob is never collected
		}
		if st.refs--; st.refs > 0 {
			continue
		}
		r, err := tx.BlobGet(tenant, sha)
		if err != nil {
			return fmt.Errorf("error reading blob %s: %w", sha, err)
		}
		r.UnrefAt = tx.now.UTC()
		st.unrefAt = r.UnrefAt
		if err := tx.setRecord(records.BlobKey(tenant, sha), r); err != nil {
			return err
		}
	}
	return nil
}
