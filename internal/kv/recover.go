package kv

import (
	"fmt"
	"os"

	"github.com/dgraph-io/badger/v4"
)

// recoverLog applies every record left in the log at dir to Badger, in
// order, and opens the log for appending after them. A record may already
// be in Badger; applying it again changes nothing, because the records
// that follow it are applied again too.
//
// The segments it replayed may go only once Badger has flushed their
// records into its synced tables, which Badger's Close does. With flush,
// recoverLog closes Badger and opens it again with opts, then removes them,
// and returns the Badger to use from now on; without, it leaves both to the
// caller's next reopen (dropReplayed) and says whether there were any. On
// an error, no Badger is left open.
func recoverLog(db *badger.DB, opts badger.Options, dir string, flush bool) (_ *badger.DB, _ *wal, replayed bool, err error) {
	defer func() {
		if err != nil && db != nil {
			db.Close()
		}
	}()
	recs, next, err := readWAL(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, false, fmt.Errorf("error reading the log in %s: %w", dir, err)
	}
	if next == 0 {
		next = 1
	}
	if err := applyRecords(db, recs); err != nil {
		return nil, nil, false, err
	}
	if len(recs) > 0 && flush {
		// Badger's commits are not synced; its Close flushes every
		// memtable into synced tables, after which the log may go.
		err, db = db.Close(), nil
		if err != nil {
			return nil, nil, false, fmt.Errorf("error flushing the log's records into badger: %w", err)
		}
		if db, err = openBadgerDB(opts); err != nil {
			return nil, nil, false, err
		}
	}
	w, err := openWAL(dir, next)
	if err != nil {
		return nil, nil, false, fmt.Errorf("error opening the log in %s: %w", dir, err)
	}
	if len(recs) > 0 && !flush {
		return db, w, true, nil
	}
	// Badger's tables hold every record now (the log may start past next:
	// openWAL never reuses a seq a recycled segment held).
	if err := w.removeApplied(w.next - 1); err != nil {
		w.close()
		return nil, nil, false, err
	}
	return db, w, false, nil
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
