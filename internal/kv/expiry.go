package kv

// What rewrites a record in place (a format migration) needs: to read each
// key's expiry and to write the new value with that same expiry.

// ScanExpiry is Scan with values, handing fn each key's expiry too (unix
// seconds, 0 for none).
func (t *Txn) ScanExpiry(prefix, after []byte, fn func(key, val []byte, expiresAt uint64) (bool, error)) error {
	return t.scan(prefix, after, false, true, fn)
}

// SetExpiresAt writes key so that it disappears at expiresAt (unix seconds;
// 0: never), as a key read with ScanExpiry did.
func (t *Txn) SetExpiresAt(key, val []byte, expiresAt uint64) error {
	if t.w == nil {
		return ErrReadOnly
	}
	if int64(len(val)) > t.w.s.maxValue {
		return errValueTooLarge
	}
	t.write(string(key), value{val: val, expiresAt: expiresAt})
	return nil
}
