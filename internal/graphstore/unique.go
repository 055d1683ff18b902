package graphstore

import (
	"time"

	"github.com/tether-run/tether/internal/records"
)

// UniqueGet returns the record of a create's unique key in tenant, or nil.
// Whether it still holds (its window, its node's status) is the caller's to
// decide; an expired one may linger until the engine drops it.
func (tx *Tx) UniqueGet(tenant, key string) (*records.UniqueRecord, error) {
	var r records.UniqueRecord
	ok, err := tx.getRecord(records.UniqueKeyKey(tenant, key), &r)
	if err != nil || !ok {
		return nil, err
	}
	return &r, nil
}

// UniquePut stores the record of a create's unique key; the engine drops it
// once keep has passed (on the wall clock, an hour late, so it is gone only
// after it can no longer match), so expired records need no sweep of ours.
func (tx *Tx) UniquePut(tenant, key string, r *records.UniqueRecord, keep time.Duration) error {
	b, err := encode(r)
	if err != nil {
		return err
	}
	return tx.kv.SetTTL(records.UniqueKeyKey(tenant, key), b, keep+time.Hour)
}
