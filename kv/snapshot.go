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
// Unlike View, which opens Badger's snapshot only when a read needs it, the
// snapshot and the copy of the segments Badger does not hold yet are taken
// together, under the lock that moves segments between the two: so no
// segment is half in and half out of what fn sees.
func (s *Store) Snapshot(fn func(key, val []byte, expiresAt uint64) error) error {
	s.visMu.Lock()
	vis := slices.Clone(s.visible)
	snap := s.db.NewTransaction(false)
	s.visMu.Unlock()
	defer snap.Discard()

	// The durable segments Badger does not hold yet, the newest write of
	// each key winning, in key order.
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

	it := snap.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 64})
	defer it.Close()
	it.Rewind()
	for {
		valid := it.Valid()
		if len(pending) > 0 {
			k := pending[0]
			cmp := 1
			if valid {
				cmp = bytes.Compare(it.Item().Key(), []byte(k))
			}
			if cmp >= 0 {
				pending = pending[1:]
				if cmp == 0 {
					it.Next() // the pending write is newer
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
			return nil
		}
		item := it.Item()
		if !item.IsDeletedOrExpired() {
			val, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if err := fn(item.Key(), val, item.ExpiresAt()); err != nil {
				return err
			}
		}
		it.Next()
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
	wb := s.db.NewWriteBatch()
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
