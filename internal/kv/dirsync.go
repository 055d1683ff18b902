package kv

import (
	"time"
)

// dirSyncEvery is how often the data directory is fsynced.
const dirSyncEvery = 100 * time.Millisecond

// syncDirLoop fsyncs Badger's directory every dirSyncEvery until Close.
//
// Badger fsyncs a new table file and then names it in its MANIFEST, but when
// a memtable is flushed it does not fsync the directory that holds the new
// file's name (compactions do). On a filesystem that keeps a new name only
// once its directory is fsynced, a power failure right after such a flush
// leaves a MANIFEST naming a file that is gone, and Badger refuses to open.
// Journaling filesystems (ext4, xfs) commit the name with the next fsync of
// anything, so they never show it; elsewhere this loop narrows the window to
// dirSyncEvery after a flush. Only Badger can close it (see docs/upstream).
func (e *badgerEngine) syncDirLoop(done <-chan struct{}) {
	t := time.NewTicker(dirSyncEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if err := syncDir(e.dir); err != nil {
				e.log.Warn("error syncing the data directory", "err", err)
			}
		}
	}
}
