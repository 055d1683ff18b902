package kv

// When the log may drop a record: Badger's commits are not synced
// (SyncWrites off), so a record the applier has committed is on stable
// storage only once Badger has flushed the memtable holding it into a table.
// Badger's public API tells when: a table lists the highest version (commit
// timestamp) of its keys, memtables are flushed in commit order, and a table
// is synced and named in the synced MANIFEST before Tables lists it. So once
// some table's MaxVersion reaches a commit's version, that commit and every
// one before it are in synced tables, and the log records they hold may go.
// Every value stays in the tables themselves (valueThreshold), never in
// Badger's value log, which is not synced either.
//
// A store that writes little may go long without a flush: its log keeps the
// records meanwhile (at most about two memtables' worth), a clean close
// flushes them (Badger's Close), and after a crash the open applies them
// again and closes Badger once to flush them (recoverLog).

import "time"

// commitAt is the last log record one of the applier's commits held, and
// the Badger version that commit got.
type commitAt struct{ seq, version uint64 }

// flushCheckEvery is how often the applier looks at Badger's tables.
const flushCheckEvery = 100 * time.Millisecond

// noteCommitted records the group the applier has just committed and, at
// most every flushCheckEvery, moves the flushed mark on past every commit
// Badger's tables now hold. The commits between two looks need one entry,
// the latest (the mark moves at most once per look), noted at the look.
func (e *badgerEngine) noteCommitted(group []*inflight) {
	for _, f := range group {
		e.newest = max(e.newest, f.seq)
	}
	if time.Since(e.checked) < flushCheckEvery {
		return
	}
	e.checked = time.Now()
	if e.newest > 0 {
		e.unflushed = append(e.unflushed, commitAt{seq: e.newest, version: e.version()})
		e.newest = 0
	}
	top := e.flushedVersion()
	n := 0
	for n < len(e.unflushed) && e.unflushed[n].version <= top {
		n++
	}
	if n == 0 {
		return
	}
	e.flushed.Store(e.unflushed[n-1].seq)
	e.unflushed = append(e.unflushed[:0], e.unflushed[n:]...)
}

// version is the version of Badger's latest commit: a read transaction
// reads at it, once every commit up to it is done. Only the applier
// commits, so right after its commit this is that commit's version, and
// that commit holds the newest record.
func (e *badgerEngine) version() uint64 {
	txn := e.db.NewTransaction(false)
	defer txn.Discard()
	return txn.ReadTs()
}

// flushedVersion is the highest version Badger's tables hold: every commit
// at or below it is in synced tables.
func (e *badgerEngine) flushedVersion() uint64 {
	var top uint64
	for _, t := range e.db.Tables() {
		top = max(top, t.MaxVersion)
	}
	return top
}
