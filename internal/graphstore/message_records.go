package graphstore

import (
	"github.com/tinylib/msgp/msgp"
	"time"
)

// The message package owns the shape of message records; the graph stores
// them under the tenant's keys, one per message id, and answers which nodes
// an identity holds (the nodes whose messages reach it).

// MessageRecordGet decodes message id of tenant into v; false when there is
// none (or it has expired).
func (tx *Tx) MessageRecordGet(tenant, id string, v msgp.Unmarshaler) (bool, error) {
	return tx.getRecord(messageKey(tenant, id), v)
}

// MessageRecordPut stores message id of tenant. With ttl > 0 it disappears
// once ttl has passed on the wall clock (Badger's TTL), else it stays.
func (tx *Tx) MessageRecordPut(tenant, id string, v msgp.Marshaler, ttl time.Duration) error {
	b, err := v.MarshalMsg(nil)
	if err != nil {
		return err
	}
	if ttl > 0 {
		return tx.kv.SetTTL(messageKey(tenant, id), b, ttl)
	}
	return tx.kv.Set(messageKey(tenant, id), b)
}

// MessageRecordScanAll calls fn with the tenant and raw record of every
// message of every tenant; for rebuilding in-memory indexes at start-up
// only. fn returns false to stop.
func (tx *Tx) MessageRecordScanAll(fn func(tenant string, raw []byte) (bool, error)) error {
	return tx.kv.Scan([]byte{tagMessage, keySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := splitKey(key, 2)
		if parts == nil {
			return true, nil
		}
		return fn(string(parts[0]), val)
	})
}

// HeldNodeIDs returns the ids of the nodes of tenant whose lease names
// holder, in id order, as of the last commit: O(log n + held). A lease past
// its expiry counts until the reaper ends it, so a caller that must know
// whether holder holds a node now reads its record.
func (tx *Tx) HeldNodeIDs(tenant, holder string) []string {
	t := tx.store.table
	t.syncLists()
	l := t.lists
	l.mu.RLock()
	defer l.mu.RUnlock()
	ti, ok := l.tenants[tenant]
	if !ok {
		return nil
	}
	tr, ok := ti.byHolder[atomOf(holder)]
	if !ok {
		return nil
	}
	ids := make([]string, 0, tr.Len())
	tr.Ascend(func(e *nodeEntry) bool {
		ids = append(ids, e.ref.id)
		return true
	})
	return ids
}
