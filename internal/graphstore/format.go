package graphstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tether-run/tether/internal/kv"
)

// FormatVersion is the version of the store's records and key layout.
//
//	1: JSON records with durable indexes (Tether before the binary codec).
//	2: MessagePack records (records.go), indexes in memory, events grouped
//	   per transaction.
//	3: node records end with the blobs they reference; blob records.
//	4: a node record may carry pointers to its event groups after its
//	   fields (node_events.go) instead of pointer keys.
//	5: the records other packages own (tenants, API keys, workers,
//	   messages, schedules and their runs) are MessagePack too, in their
//	   owners' generated codecs, instead of JSON (foreign_records.go).
const FormatVersion = 5

// migratesFrom is the oldest format this server opens and moves to
// FormatVersion. A format-3 store is a format-4 store without pointers in
// its records (every pointer is a key, which format 4 reads too); both hold
// the other packages' records as JSON, which Open recodes before it writes
// the new version (format_json_records.go).
const migratesFrom = 3

var formatKey = []byte{0x01, 'f', 'o', 'r', 'm', 'a', 't'}

// checkFormat reads the format of the data directory: 0 for a fresh (empty)
// store, which takes the current one; a version this server neither reads
// nor migrates is refused with both named.
func (s *Store) checkFormat(dir string) (stored int, err error) {
	err = s.kv.View(func(tx *kv.Txn) error {
		b, ok, err := tx.Get(formatKey)
		if err != nil {
			return err
		}
		if ok {
			stored, _ = strconv.Atoi(string(b))
			if stored < migratesFrom || stored > FormatVersion {
				return fmt.Errorf("the data directory %s holds store format %d, and this server reads format %d (and migrates %d): run the release that wrote it, or start from an empty directory", dir, stored, FormatVersion, migratesFrom)
			}
			return nil
		}
		empty := true
		if err := tx.Scan(nil, nil, false, false, func(_, _ []byte) (bool, error) {
			empty = false
			return false, nil
		}); err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("the data directory %s holds store format 1 (JSON records, before the binary codec), and this server reads format %d: run the release that wrote it, or start from an empty directory", dir, FormatVersion)
		}
		return nil
	})
	return stored, err
}

func (s *Store) writeFormat() error {
	return s.kv.Update(context.Background(), func(tx *kv.Txn) error {
		return tx.Set(formatKey, []byte(strconv.Itoa(FormatVersion)))
	})
}
