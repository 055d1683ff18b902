package records

import (
	"fmt"
	"time"

	"github.com/tinylib/msgp/msgp"

	"github.com/tether-run/tether/internal/kv"
)

// Txn reads and writes, inside one kv transaction, the records whose shape
// another package owns: tenants and API keys (package tenancy), workers
// (fleet), messages (message), schedules and their runs (schedule). Their
// keys are here; their types and codecs are their owners' (foreign.go).
// graphstore's Tx hands one out (Tx.Records), so these writes commit with
// the model's. A write in a read-only transaction is kv.ErrReadOnly.
type Txn struct{ kv *kv.Txn }

// On is the records of ktx.
func On(ktx *kv.Txn) Txn { return Txn{kv: ktx} }

func (t Txn) get(key []byte, v msgp.Unmarshaler) (bool, error) {
	b, ok, err := t.kv.Get(key)
	if err != nil || !ok {
		return ok, err
	}
	if _, err := v.UnmarshalMsg(b); err != nil {
		return true, fmt.Errorf("error decoding %q: %w", key, err)
	}
	return true, nil
}

func (t Txn) set(key []byte, v msgp.Marshaler) error {
	b, err := v.MarshalMsg(nil)
	if err != nil {
		return err
	}
	return t.kv.Set(key, b)
}

// TenantGet decodes the tenant record into v; false when there is none.
func (t Txn) TenantGet(tenant string, v msgp.Unmarshaler) (bool, error) {
	return t.get(TenantKey(tenant), v)
}

// TenantPut stores the tenant record.
func (t Txn) TenantPut(tenant string, v msgp.Marshaler) error {
	return t.set(TenantKey(tenant), v)
}

// APIKeyGet decodes API key id of tenant into v; false when there is none.
func (t Txn) APIKeyGet(tenant, id string, v msgp.Unmarshaler) (bool, error) {
	return t.get(APIKeyKey(tenant, id), v)
}

// APIKeyPut stores API key id of tenant.
func (t Txn) APIKeyPut(tenant, id string, v msgp.Marshaler) error {
	return t.set(APIKeyKey(tenant, id), v)
}

// APIKeyDelete erases API key id of tenant.
func (t Txn) APIKeyDelete(tenant, id string) error {
	return t.kv.Delete(APIKeyKey(tenant, id))
}

// APIKeyList calls fn with each raw API key record of tenant in id order,
// starting after id `after` ("" from the start).
func (t Txn) APIKeyList(tenant, after string, fn func(id string, raw []byte) (bool, error)) error {
	prefix := NewKey(TagAPIKey, tenant).Bytes()
	var start []byte
	if after != "" {
		start = APIKeyKey(tenant, after)
	}
	return t.kv.Scan(prefix, start, false, true, func(key, val []byte) (bool, error) {
		return fn(string(key[len(prefix):]), val)
	})
}

// WorkerGet decodes the record of worker of identity by into v; false
// when there is none (or it has expired).
func (t Txn) WorkerGet(tenant, by, worker string, v msgp.Unmarshaler) (bool, error) {
	return t.get(WorkerKey(tenant, by, worker), v)
}

// WorkerPut stores the record of worker of identity by. It disappears
// once ttl has passed on the wall clock (Badger's TTL), unless a later put
// renews it.
func (t Txn) WorkerPut(tenant, by, worker string, v msgp.Marshaler, ttl time.Duration) error {
	b, err := v.MarshalMsg(nil)
	if err != nil {
		return err
	}
	return t.kv.SetTTL(WorkerKey(tenant, by, worker), b, ttl)
}

// WorkerList calls fn with each raw worker record of tenant in (by,
// worker) order, starting after the record (afterBy, afterWorker) when
// afterBy is not empty. fn returns false to stop.
func (t Txn) WorkerList(tenant, afterBy, afterWorker string, fn func(raw []byte) (bool, error)) error {
	prefix := NewKey(TagWorker, tenant).Bytes()
	var start []byte
	if afterBy != "" {
		start = WorkerKey(tenant, afterBy, afterWorker)
	}
	return t.kv.Scan(prefix, start, false, true, func(_, val []byte) (bool, error) {
		return fn(val)
	})
}

// MessageGet decodes message id of tenant into v; false when there is
// none (or it has expired).
func (t Txn) MessageGet(tenant, id string, v msgp.Unmarshaler) (bool, error) {
	return t.get(MessageKey(tenant, id), v)
}

// MessagePut stores message id of tenant. With ttl > 0 it disappears
// once ttl has passed on the wall clock (Badger's TTL), else it stays.
func (t Txn) MessagePut(tenant, id string, v msgp.Marshaler, ttl time.Duration) error {
	b, err := v.MarshalMsg(nil)
	if err != nil {
		return err
	}
	if ttl > 0 {
		return t.kv.SetTTL(MessageKey(tenant, id), b, ttl)
	}
	return t.kv.Set(MessageKey(tenant, id), b)
}

// MessageScanAll calls fn with the tenant and raw record of every
// message of every tenant; for rebuilding in-memory indexes at start-up
// only. fn returns false to stop.
func (t Txn) MessageScanAll(fn func(tenant string, raw []byte) (bool, error)) error {
	return t.kv.Scan([]byte{TagMessage, KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := SplitKey(key, 2)
		if parts == nil {
			return true, nil
		}
		return fn(string(parts[0]), val)
	})
}

// ScheduleGet decodes schedule id of tenant into v; false when there is none.
func (t Txn) ScheduleGet(tenant, id string, v msgp.Unmarshaler) (bool, error) {
	return t.get(ScheduleKey(tenant, id), v)
}

// SchedulePut stores schedule id of tenant.
func (t Txn) SchedulePut(tenant, id string, v msgp.Marshaler) error {
	return t.set(ScheduleKey(tenant, id), v)
}

// ScheduleDelete erases schedule id of tenant and every run record it has.
func (t Txn) ScheduleDelete(tenant, id string) error {
	var keys [][]byte
	prefix := NewKey(TagScheduleRun, tenant).Str(id).Bytes()
	err := t.kv.Scan(prefix, nil, false, false, func(key, _ []byte) (bool, error) {
		keys = append(keys, append([]byte(nil), key...))
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := t.kv.Delete(k); err != nil {
			return err
		}
	}
	return t.kv.Delete(ScheduleKey(tenant, id))
}

// ScheduleList calls fn with each raw schedule record of tenant in id order,
// starting after id `after` ("" from the start). fn returns false to stop.
func (t Txn) ScheduleList(tenant, after string, fn func(id string, raw []byte) (bool, error)) error {
	prefix := NewKey(TagSchedule, tenant).Bytes()
	var start []byte
	if after != "" {
		start = ScheduleKey(tenant, after)
	}
	return t.kv.Scan(prefix, start, false, true, func(key, val []byte) (bool, error) {
		return fn(string(key[len(prefix):]), val)
	})
}

// ScheduleListAll calls fn with every schedule record of every tenant. Only
// start-up ranges across tenants: the firing loop learns what is due.
func (t Txn) ScheduleListAll(fn func(tenant, id string, raw []byte) error) error {
	return t.kv.Scan([]byte{TagSchedule, KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := SplitKey(key, 2)
		if len(parts) != 2 {
			return true, nil
		}
		return true, fn(string(parts[0]), string(parts[1]), val)
	})
}

// ScheduleRunGet decodes run seq of schedule id into v; false when there is none.
func (t Txn) ScheduleRunGet(tenant, id string, seq uint64, v msgp.Unmarshaler) (bool, error) {
	return t.get(ScheduleRunKey(tenant, id, seq), v)
}

// ScheduleRunPut stores run seq of schedule id.
func (t Txn) ScheduleRunPut(tenant, id string, seq uint64, v msgp.Marshaler) error {
	return t.set(ScheduleRunKey(tenant, id, seq), v)
}

// ScheduleRunDelete erases run seq of schedule id (no error when absent).
func (t Txn) ScheduleRunDelete(tenant, id string, seq uint64) error {
	return t.kv.Delete(ScheduleRunKey(tenant, id, seq))
}

// ScheduleRunList calls fn with the raw run records of schedule id, newest
// (highest seq) first, starting below seq `before` (0: from the newest). fn
// returns false to stop.
func (t Txn) ScheduleRunList(tenant, id string, before uint64, fn func(seq uint64, raw []byte) (bool, error)) error {
	prefix := NewKey(TagScheduleRun, tenant).Str(id).Bytes()
	var start []byte
	if before > 0 {
		start = ScheduleRunKey(tenant, id, before)
	}
	return t.kv.Scan(prefix, start, true, true, func(key, val []byte) (bool, error) {
		if len(key) != len(prefix)+8 {
			return true, nil
		}
		return fn(Uint64FromBytes(key[len(prefix):]), val)
	})
}
