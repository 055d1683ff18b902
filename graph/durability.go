package graph

// Durability: the syncer that makes committed batches durable before their
// callers are answered, and the fsync of rotated memtable WAL files.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether-run/tether/fault"
)

// committed is a batch whose durable requests wait for an fsync.
type committed struct {
	needSync bool
	waiting  []outcome
}

// syncLoop makes committed batches durable: one fsync covers every batch
// committed before it started, and only then are their callers answered. It
// runs beside the writer, so the writer applies the next batch during the
// fsync of the last one (pipelined group commit).
func (s *Store) syncLoop() {
	defer close(s.synced)
	for c := range s.syncq {
		group := []*committed{c}
	gather:
		for {
			select {
			case more, ok := <-s.syncq:
				if !ok {
					break gather
				}
				group = append(group, more)
			default:
				break gather
			}
		}
		start := time.Now()
		err := errors.Join(s.db.Sync(), s.walSync.syncRotated(false))
		s.stats.Syncs.Add(1)
		s.stats.SyncNanos.Add(time.Since(start).Nanoseconds())
		if err != nil {
			s.log.Error("error syncing store", "err", err)
		}
		for _, c := range group {
			for _, o := range c.waiting {
				if err != nil {
					o.req.err <- fault.ErrUnavailable
					continue
				}
				o.req.err <- nil
				if len(o.events) > 0 {
					s.events.publish(o.events)
				}
			}
		}
	}
}

// walSyncer closes the gap that db.Sync leaves: it syncs only the active
// memtable's WAL, so a memtable that rotated out between a commit and the sync
// would hold acknowledged writes that are not on disk until Badger flushes it.
// After each sync we fsync every older .mem file we have not synced since it
// stopped being written to.
type walSyncer struct {
	dir    string
	synced map[string]bool
}

func (w *walSyncer) syncRotated(all bool) error {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("error listing %s: %w", w.dir, err)
	}
	var mems []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".mem") {
			mems = append(mems, e.Name())
		}
	}
	if len(mems) <= 1 && !all {
		return nil
	}
	if w.synced == nil {
		w.synced = map[string]bool{}
	}
	// Names are zero-padded fids, so lexical order is creation order; the last
	// one is the active memtable that db.Sync already covered.
	present := map[string]bool{}
	var errs []error
	for i, name := range mems {
		present[name] = true
		if (i == len(mems)-1 && !all) || w.synced[name] {
			continue
		}
		f, err := os.OpenFile(filepath.Join(w.dir, name), os.O_RDWR, 0)
		if err != nil {
			if os.IsNotExist(err) {
				continue // flushed and removed meanwhile: it is in an SST now
			}
			errs = append(errs, err)
			continue
		}
		if err := f.Sync(); err != nil {
			errs = append(errs, err)
		} else if i != len(mems)-1 {
			w.synced[name] = true
		}
		f.Close()
	}
	for name := range w.synced {
		if !present[name] {
			delete(w.synced, name)
		}
	}
	return errors.Join(errs...)
}
