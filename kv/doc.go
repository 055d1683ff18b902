// Package kv is Tether's storage engine: an ordered, transactional key-value
// store with one writer goroutine, group commit and durability. Badger holds
// the data; a write-ahead log of our own (wal.go) makes writes durable. It
// knows nothing of nodes, edges or tenants beyond the fairness key a request
// carries (fairness.go); the graph model lives above it.
//
// A write goes through three goroutines, each in commit order:
//
//	writer   applies closures into the current segment (a failed one is taken
//	         back out by its undo log); hands the segment on without waiting
//	         (writer.go)
//	logger   appends every waiting segment to the log, one fdatasync for the
//	         group; then makes them visible to View, runs their OnDurable
//	         hooks and answers their callers
//	applier  writes durable segments into Badger at most every 5 ms
//	         (SyncWrites: each Badger commit is synced when it completes; a
//	         segment too large for one is committed in parts), then drops them
//	         from the readers' view and lets the log remove them
//
// Invariants:
//   - Exactly one goroutine applies closures. A closure reads the segment
//     (its own writes and its predecessors'), then the segments not yet in
//     Badger, then a Badger snapshot; a closure that fails leaves nothing
//     behind, and closures never conflict.
//   - An Update returns only when its writes, and every write before them,
//     are durable in the log and visible to View: nothing a reader sees can
//     be lost by a power failure, and a caller always reads its own writes.
//     Two exceptions return once applied: UpdateEager and UpdateUrgent
//     (renewals and reaps, which a restart makes good), and writes made
//     under a Barrier, whose caller waits once for all of them (barrier.go).
//     Their writes still reach readers only once durable.
//   - A closure that fails is answered only once every write it could have
//     read is durable (under a Barrier, the barrier waits for them): a
//     refusal never rests on a write that a crash could lose or that a
//     reader cannot see yet.
//   - Durability uses no knowledge of Badger's files: the log is ours (one
//     write and one fdatasync of a preallocated segment per group), and a
//     log segment is removed only after Badger's synced commits hold every
//     record in it. At open, what is left of the log is applied to Badger
//     again, in order, up to the first torn record.
//   - The writer applies segment N+1 while N is logged and applied; a Badger
//     snapshot is opened only when a closure reads a key no segment
//     in flight holds, and opening it waits for the commits already handed
//     to Badger, so reads never miss a write. The model's hot paths read from
//     memory and never wait.
//   - Which crash rule is guaranteed: the lenient one, where a file's new
//     name is durable once the file or its directory is fsynced (what ext4
//     and xfs give). Tether's own files also meet the strict one (a name is
//     durable only once its directory is fsynced): the log fsyncs its
//     directory when it makes or removes a segment, and the data directory
//     when it makes the log's. Badger does not fsync the directory after a
//     memtable flush, so under the strict rule a crash just after one can
//     leave a store Badger will not open; syncDirLoop narrows that window to
//     100 ms (docs/upstream/badger-flush-dirsync.md, with the reproduction).
//   - A log or Badger write that fails stops the store from taking writes
//     (Healthy is false); a restart recovers from the log.
//   - Opening removes zero-length *.mem files before Badger sees them: a crash
//     between a memtable rotation and the new file's first sync can leave one,
//     it can hold no data, and Badger refuses to open with it present. This
//     is the one place Tether looks at Badger's files.
package kv
