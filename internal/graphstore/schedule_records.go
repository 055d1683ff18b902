package graphstore

import (
	"github.com/tinylib/msgp/msgp"
)

// The schedule package owns the shape of schedule records and of their run
// records; the graph stores them under the tenant's keys like everything
// else: one record per schedule (H|t|id) and one per fire (h|t|id|seq), so a
// schedule's history lists newest first by a reverse range over its seqs.

// ScheduleGet decodes schedule id of tenant into v; false when there is none.
func (tx *Tx) ScheduleGet(tenant, id string, v msgp.Unmarshaler) (bool, error) {
	return tx.getRecord(scheduleKey(tenant, id), v)
}

// SchedulePut stores schedule id of tenant.
func (tx *Tx) SchedulePut(tenant, id string, v msgp.Marshaler) error {
	if !tx.writable {
		return errReadOnly
	}
	return tx.setRecord(scheduleKey(tenant, id), v)
}

// ScheduleDelete erases schedule id of tenant and every run record it has.
func (tx *Tx) ScheduleDelete(tenant, id string) error {
	if !tx.writable {
		return errReadOnly
	}
	var keys [][]byte
	prefix := newKey(tagScheduleRun, tenant).str(id).bytes()
	err := tx.kv.Scan(prefix, nil, false, false, func(key, _ []byte) (bool, error) {
		keys = append(keys, append([]byte(nil), key...))
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.kv.Delete(k); err != nil {
			return err
		}
	}
	return tx.kv.Delete(scheduleKey(tenant, id))
}

// ScheduleList calls fn with each raw schedule record of tenant in id order,
// starting after id `after` ("" from the start). fn returns false to stop.
func (tx *Tx) ScheduleList(tenant, after string, fn func(id string, raw []byte) (bool, error)) error {
	prefix := newKey(tagSchedule, tenant).bytes()
	var start []byte
	if after != "" {
		start = scheduleKey(tenant, after)
	}
	return tx.kv.Scan(prefix, start, false, true, func(key, val []byte) (bool, error) {
		return fn(string(key[len(prefix):]), val)
	})
}

// ScheduleListAll calls fn with every schedule record of every tenant. Only
// start-up ranges across tenants: the firing loop learns what is due.
func (tx *Tx) ScheduleListAll(fn func(tenant, id string, raw []byte) error) error {
	return tx.kv.Scan([]byte{tagSchedule, keySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := splitKey(key, 2)
		if len(parts) != 2 {
			return true, nil
		}
		return true, fn(string(parts[0]), string(parts[1]), val)
	})
}

// ScheduleRunGet decodes run seq of schedule id into v; false when there is none.
func (tx *Tx) ScheduleRunGet(tenant, id string, seq uint64, v msgp.Unmarshaler) (bool, error) {
	return tx.getRecord(scheduleRunKey(tenant, id, seq), v)
}

// ScheduleRunPut stores run seq of schedule id.
func (tx *Tx) ScheduleRunPut(tenant, id string, seq uint64, v msgp.Marshaler) error {
	if !tx.writable {
		return errReadOnly
	}
	return tx.setRecord(scheduleRunKey(tenant, id, seq), v)
}

// ScheduleRunDelete erases run seq of schedule id (no error when absent).
func (tx *Tx) ScheduleRunDelete(tenant, id string, seq uint64) error {
	if !tx.writable {
		return errReadOnly
	}
	return tx.kv.Delete(scheduleRunKey(tenant, id, seq))
}

// ScheduleRunList calls fn with the raw run records of schedule id, newest
// (highest seq) first, starting below seq `before` (0: from the newest). fn
// returns false to stop.
func (tx *Tx) ScheduleRunList(tenant, id string, before uint64, fn func(seq uint64, raw []byte) (bool, error)) error {
	prefix := newKey(tagScheduleRun, tenant).str(id).bytes()
	var start []byte
	if before > 0 {
		start = scheduleRunKey(tenant, id, before)
	}
	return tx.kv.Scan(prefix, start, true, true, func(key, val []byte) (bool, error) {
		if len(key) != len(prefix)+8 {
			return true, nil
		}
		return fn(uint64FromBytes(key[len(prefix):]), val)
	})
}
