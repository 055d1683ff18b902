package kv

import (
	"fmt"
	"os"

	"github.com/dgraph-io/badger/v4"
)

// recoverLog applies every record left in the log at dir to Badger, in
// order, and opens the log for appending after them. A record may already
// be in Badger; applying it again changes nothing, because the records that
// follow it are applied again too.
func recoverLog(db *badger.DB, dir string) (*wal, error) {
	recs, next, err := readWAL(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("error reading the log in %s: %w", dir, err)
	}
	if next == 0 {
		next = 1
	}
	txn := db.NewTransaction(true)
	defer func() { txn.Discard() }()
	for _, rec := range recs {
		for _, e := range rec.entries {
			err := e.stage(txn)
			if err == badger.ErrTxnTooBig {
				if err = txn.Commit(); err != nil {
					return nil, fmt.Errorf("error applying the log: %w", err)
				}
				txn = db.NewTransaction(true)
				err = e.stage(txn)
			}
			if err != nil {
				return nil, fmt.Errorf("error applying the log: %w", err)
			}
		}
	}
	if err := txn.Commit(); err != nil {
		return nil, fmt.Errorf("error applying the log: %w", err)
	}
	w, err := openWAL(dir, next)
	if err != nil {
		return nil, fmt.Errorf("error opening the log in %s: %w", dir, err)
	}
	// Badger holds every record now (its commits are synced).
	if err := w.removeApplied(next - 1); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// stage writes the entry into a Badger transaction.
func (e walEntry) stage(txn *badger.Txn) error {
	if e.deleted {
		return txn.Delete(e.key)
	}
	en := badger.NewEntry(e.key, e.val)
	en.ExpiresAt = e.expiresAt
	return txn.SetEntry(en)
}
