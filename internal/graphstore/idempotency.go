package graphstore

import (
	"time"

	"github.com/tether-run/tether/internal/records"
)

// IdempotencyGet returns the record of key in tenant if one exists and is
// younger than window at the transaction's instant.
func (tx *Tx) IdempotencyGet(tenant, key string, window time.Duration) (*records.IdempotencyRecord, error) {
	var r records.IdempotencyRecord
	ok, err := tx.getRecord(records.IdempotencyKey(tenant, key), &r)
	if err != nil || !ok {
		return nil, err
	}
	if !tx.now.Before(r.CreatedAt.Add(window)) {
		return nil, nil
	}
	return &r, nil
}

// IdempotencyPut stores the record of key; Badger drops it after window, so
// expired records never need a sweep of ours.
func (tx *Tx) IdempotencyPut(tenant, key string, r *records.IdempotencyRecord, window time.Duration) error {
	r.CreatedAt = tx.now.UTC()
	b, err := encode(r)
	if err != nil {
		return err
	}
	// The TTL runs on the wall clock, a little past the window, so the record
	// is gone only after it can no longer match.
	return tx.kv.SetTTL(records.IdempotencyKey(tenant, key), b, window+time.Hour)
}
