package graphstore

import "github.com/tether-run/tether/internal/records"

// The store format (records.FormatVersion and the fields marker) is read at
// open, and refused when this release does not open it, before any record
// is; once the store is open, the markers are brought up to this release.

func (s *Store) checkFormat(dir string) (records.StoredFormat, error) {
	return records.ReadFormat(s.kv, dir)
}

func (s *Store) writeFormat(stored records.StoredFormat) (bool, error) {
	return records.WriteFormat(s.kv, stored)
}
