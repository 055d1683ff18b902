package graphstore

import (
	"time"

	"github.com/tether-run/tether/internal/records"
)

// IdempotencyGet returns the record of a create's key in tenant if one exists
// and is younger than window at the transaction's instant.
func (tx *Tx) IdempotencyGet(tenant, key string, window time.Duration) (*records.IdempotencyRecord, error) {
	return tx.idempotencyGet(records.IdempotencyKey(tenant, key), window)
}

// IdempotencyPut stores the record of a create's key.
func (tx *Tx) IdempotencyPut(tenant, key string, r *records.IdempotencyRecord, window time.Duration) error {
	return tx.idempotencyPut(records.IdempotencyKey(tenant, key), r, window)
}

// ClaimIdempotencyGet is IdempotencyGet for a claim's key, which lives apart
// from the creates' keys.
func (tx *Tx) ClaimIdempotencyGet(tenant, key string, window time.Duration) (*records.IdempotencyRecord, error) {
	return tx.idempotencyGet(records.ClaimIdempotencyKey(tenant, key), window)
}

// ClaimIdempotencyPut is IdempotencyPut for a claim's key; it stamps the
// record's Op.
func (tx *Tx) ClaimIdempotencyPut(tenant, key string, r *records.IdempotencyRecord, window time.Duration) error {
	r.Op = records.OpClaim
	return tx.idempotencyPut(records.ClaimIdempotencyKey(tenant, key), r, window)
}

func (tx *Tx) idempotencyGet(k []byte, window time.Duration) (*records.IdempotencyRecord, error) {
	var r records.IdempotencyRecord
	ok, err := tx.getRecord(k, &r)
	if err != nil || !ok {
		return nil, err
	}
	if !tx.now.Before(r.CreatedAt.Add(window)) {
		return nil, nil
	}
	return &r, nil
}

// idempotencyPut stores a record under k, created now unless it was created
// before (a claim's record grows chunk by chunk and keeps its first instant);
// the engine drops it after window, so expired records never need a sweep of
// ours.
func (tx *Tx) idempotencyPut(k []byte, r *records.IdempotencyRecord, window time.Duration) error {
	if r.CreatedAt.IsZero() {
		r.CreatedAt = tx.now.UTC()
	}
	b, err := encode(r)
	if err != nil {
		return err
	}
	// The TTL runs on the wall clock, a little past the window, so the record
	// is gone only after it can no longer match.
	return tx.kv.SetTTL(k, b, window+time.Hour)
}
