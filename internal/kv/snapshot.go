package kv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Snapshot calls fn with every key of the store, in key order, with its
// value and expiry (unix seconds, 0 for none), as of one instant: the state
// after some durable segment, all of it and nothing later, however long fn
// takes. Expired keys are left out. fn must not keep key or val.
//
// Unlike View, which opens the engine's snapshot only when a read needs it,
// the snapshot and the copy of the segments the engine does not hold yet
// are taken together, under the lock that moves segments between the two:
// so no segment is half in and half out of what fn sees.
func (s *Store) Snapshot(fn func(key, val []byte, expiresAt uint64) error) error {
	s.visMu.Lock()
	vis := slices.Clone(s.visible)
	snap, err := s.eng.snapshotReader()
	s.visMu.Unlock()
	if err != nil {
		return err
	}
	defer snap.discard()

	// The durable segments the engine does not hold yet, the newest write
	// of each key winning, in key order.
	merged := map[string]value{}
	for _, f := range vis {
		for k, v := range f.over.vals {
			merged[k] = v
		}
	}
	pending := make([]string, 0, len(merged))
	for k := range merged {
		pending = append(pending, k)
	}
	slices.Sort(pending)
	now := uint64(time.Now().Unix())
	live := func(expiresAt uint64) bool { return expiresAt == 0 || expiresAt > now }

	it := snap.scan(nil, nil, false, true)
	defer it.close()
	for {
		valid := it.valid()
		if len(pending) > 0 {
			k := pending[0]
			cmp := 1
			if valid {
				cmp = bytes.Compare(it.key(), []byte(k))
			}
			if cmp >= 0 {
				pending = pending[1:]
				if cmp == 0 {
					it.next() // the pending write is newer
				}
				if v := merged[k]; !v.deleted && live(v.expiresAt) {
					if err := fn([]byte(k), v.val, v.expiresAt); err != nil {
						return err
					}
				}
				continue
			}
		}
		if !valid {
			return it.err()
		}
		val, err := it.value()
		if err != nil {
			return err
		}
		if err := fn(it.key(), val, it.expiresAt()); err != nil {
			return err
		}
		it.next()
	}
}

// Load fills a new store in dir, which must not exist or be empty, with the
// keys fill puts, and closes it: what a restore writes before the server
// opens the directory. A key put twice keeps its last value.
func Load(dir string, fill func(put func(key, val []byte, expiresAt uint64) error) error) (err error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s, err := Open(Options{Dir: dir})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	b, ok := s.eng.(*badgerEngine)
	if !ok {
		return errors.New("kv.Load fills a Badger store only")
	}
	wb := b.db.NewWriteBatch()
	defer wb.Cancel()
	put := func(key, val []byte, expiresAt uint64) error {
		e := badger.NewEntry(bytes.Clone(key), bytes.Clone(val))
		e.ExpiresAt = expiresAt
		return wb.SetEntry(e)
	}
	if err := fill(put); err != nil {
		return err
	}
	return wb.Flush()
}
