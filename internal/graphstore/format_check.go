package graphstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// The store format version (records.FormatVersion) is checked at open and
// written once the data directory is at it; a format-3 or -4 directory is
// migrated first (format_json_records.go).

// checkFormat reads the format of the data directory: 0 for a fresh (empty)
// store, which takes the current one; a version this server neither reads
// nor migrates is refused with both named.
func (s *Store) checkFormat(dir string) (stored int, err error) {
	err = s.kv.View(func(tx *kv.Txn) error {
		b, ok, err := tx.Get(records.FormatKey)
		if err != nil {
			return err
		}
		if ok {
			stored, _ = strconv.Atoi(string(b))
			if stored < records.MigratesFrom || stored > records.FormatVersion {
				return fmt.Errorf("the data directory %s holds store format %d, and this server reads format %d (and migrates %d): run the release that wrote it, or start from an empty directory", dir, stored, records.FormatVersion, records.MigratesFrom)
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
			return fmt.Errorf("the data directory %s holds store format 1 (JSON records, before the binary codec), and this server reads format %d: run the release that wrote it, or start from an empty directory", dir, records.FormatVersion)
		}
		return nil
	})
	return stored, err
}

func (s *Store) writeFormat() error {
	return s.kv.Update(context.Background(), func(tx *kv.Txn) error {
		return tx.Set(records.FormatKey, []byte(strconv.Itoa(records.FormatVersion)))
	})
}
