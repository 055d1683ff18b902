package graph

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tether-run/tether/kv"
)

// FormatVersion is the version of the store's records and key layout.
//
//	1: JSON records with durable indexes (Tether before the binary codec).
//	2: MessagePack records (records.go), indexes in memory, events grouped
//	   per transaction.
//	3: node records end with the blobs they reference; blob records.
const FormatVersion = 3

var formatKey = []byte{0x01, 'f', 'o', 'r', 'm', 'a', 't'}

// checkFormat reads the format of the data directory: fresh (empty) stores
// take the current one; another version is refused with both named.
func (s *Store) checkFormat(dir string) (fresh bool, err error) {
	err = s.kv.View(func(tx *kv.Txn) error {
		b, ok, err := tx.Get(formatKey)
		if err != nil {
			return err
		}
		if ok {
			v, _ := strconv.Atoi(string(b))
			if v != FormatVersion {
				return fmt.Errorf("the data directory %s holds store format %d, and this server reads format %d: run the release that wrote it, or start from an empty directory", dir, v, FormatVersion)
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
		fresh = true
		return nil
	})
	return fresh, err
}

func (s *Store) writeFormat() error {
	return s.kv.Update(context.Background(), func(tx *kv.Txn) error {
		return tx.Set(formatKey, []byte(strconv.Itoa(FormatVersion)))
	})
}
