package kv

import (
	"fmt"
	"os"

	"github.com/dgraph-io/badger/v4"
)

// recoverLog applies every record left in the log at dir to Badger, in
// order, makes Badger flush them into its synced tables (closing and
// opening it again with opts), and opens the log for appending after them.
// A record may already be in Badger; applying it again changes nothing,
// because the records that follow it are applied again too. It returns
// the Badger to use from now on; on an error, no Badger is left open.
func recoverLog(db *badger.DB, opts badger.Options, dir string) (_ *badger.DB, _ *wal, err error) {
	defer func() {
		if err != nil && db != nil {
			db.Close()
		}
	}()
	recs, next, err := readWAL(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, fmt.Errorf("error reading the log in %s: %w", dir, err)
	}
	if next == 0 {
		next = 1
	}
	if err := applyRecords(db, recs); err != nil {
		return nil, nil, err
	}
	if len(recs) > 0 {
		// Badger's commits are not synced; its Close flushes every
		// memtable into synced tables, after which the log may go.
		err, db = db.Close(), nil
		if err != nil {
			return nil, nil, fmt.Errorf("error flushing the log's records into badger: %w", err)
		}
		if db, err = openBadgerDB(opts); err != nil {
			return nil, nil, err
		}
	}
	w, err := openWAL(dir, next)
	if err != nil {
		return nil, nil, fmt.Errorf("error opening the log in %s: %w", dir, err)
	}
	// Badger's tables hold every record now (the log may start past next:
	// openWAL never reuses a seq a recycled segment held).
	if err := w.removeApplied(w.next - 1); err != nil {
		w.close()
		return nil, nil, err
	}
	return db, w, nil
}

// applyRecords writes the log's records into Badger, in order.
func applyRecords(db *badger.DB, recs []walRecord) error {
	txn := db.NewTransaction(true)
	defer func() { txn.Discard() }()
	for _, rec := range recs {
		for _, e := range rec.entries {
			err := e.stage(txn)
			if err == badger.ErrTxnTooBig {
				if err = txn.Commit(); err != nil {
					return fmt.Errorf("error applying the log: %w", err)
				}
				txn = db.NewTransaction(true)
				err = e.stage(txn)
			}
			if err != nil {
				return fmt.Errorf("error applying the log: %w", err)
			}
		}
	}
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("error applying the log: %w", err)
	}
	return nil
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
