package graphstore

import (
	"github.com/tinylib/msgp/msgp"
	"time"
)

// The fleet package owns the shape of worker heartbeat records; the graph
// stores them under the tenant's keys, one per (identity, worker name).

// WorkerRecordGet decodes the record of worker of identity by into v; false
// when there is none (or it has expired).
func (tx *Tx) WorkerRecordGet(tenant, by, worker string, v msgp.Unmarshaler) (bool, error) {
	return tx.getRecord(workerKey(tenant, by, worker), v)
}

// WorkerRecordPut stores the record of worker of identity by. It disappears
// once ttl has passed on the wall clock (Badger's TTL), unless a later put
// renews it.
func (tx *Tx) WorkerRecordPut(tenant, by, worker string, v msgp.Marshaler, ttl time.Duration) error {
	b, err := v.MarshalMsg(nil)
	if err != nil {
		return err
	}
	return tx.kv.SetTTL(workerKey(tenant, by, worker), b, ttl)
}

// WorkerRecordList calls fn with each raw worker record of tenant in (by,
// worker) order, starting after the record (afterBy, afterWorker) when
// afterBy is not empty. fn returns false to stop.
func (tx *Tx) WorkerRecordList(tenant, afterBy, afterWorker string, fn func(raw []byte) (bool, error)) error {
	prefix := newKey(tagWorker, tenant).bytes()
	var start []byte
	if afterBy != "" {
		start = workerKey(tenant, afterBy, afterWorker)
	}
	return tx.kv.Scan(prefix, start, false, true, func(_, val []byte) (bool, error) {
		return fn(val)
	})
}
