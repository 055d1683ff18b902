// Package kv is Tether's storage engine: an ordered, transactional key-value
// store with one writer goroutine, group commit and durability. It knows
// nothing of nodes, edges or tenants beyond the fairness key a request
// carries (fairness.go); the graph model lives above it.
//
// One Store (its writer, segments, overlays, fairness, barriers, hooks) runs
// over one of four engines (engine.go), which hold the committed state and
// make writes durable:
//
//	Badger (Open)    Badger holds the data in a directory; a write-ahead log
//	                 of our own (wal.go) makes a group durable with one
//	                 fdatasync; the applier writes it into Badger behind.
//	                 Durable = in the log on this machine's disk.
//	etcd (OpenEtcd)  etcd holds the data under a prefix (etcd.go); a group
//	                 is durable once etcd has committed it (raft quorum and
//	                 fsync on a majority), and applied at the same time.
//	                 Durable = committed by etcd.
//	PostgreSQL       the rows of one shard of a kv table hold the data
//	(OpenPostgres)   (postgres.go); a group is durable once PostgreSQL has
//	                 committed it (one transaction, one round trip), and
//	                 applied at the same time. Durable = committed by
//	                 PostgreSQL (its WAL fsynced; its replicas, as the
//	                 operator configured synchronous_commit).
//	memory (OpenMem) a MemDisk holds the data (mem.go), for the simulation
//	                 (internal/sim): a group is written, synced after an
//	                 injected delay and applied at once; faults are
//	                 injected into the disk. Durable = synced on the disk.
//
// A write goes through three goroutines, each in commit order:
//
//	writer   applies closures into the current segment (a failed one is taken
//	         back out by its undo log); hands the segment on without waiting
//	         (writer.go)
//	logger   makes every waiting segment durable as one group (Badger: one
//	         log append and fdatasync; etcd: guarded transactions;
//	         PostgreSQL: one guarded transaction); then
//	         makes them visible to View (taking their writes shown early
//	         off the shown list), runs their OnDurable hooks and answers
//	         their callers (logger.go)
//	applier  Badger: writes durable segments into Badger at most every 5 ms
//	         (commits Badger does not sync; a segment too large for one is
//	         committed in parts), then drops them from the readers' view,
//	         and lets the log remove them once Badger has flushed them into
//	         its synced tables (flushed.go). etcd, PostgreSQL: the logger
//	         applied them; it drops them from the readers' view
//
// Invariants (every engine):
//   - Exactly one goroutine applies closures. A closure reads the segment
//     (its own writes and its predecessors'), then the segments not yet
//     applied, then the engine's committed state (a Badger snapshot; etcd's
//     linearizable reads at one revision); a closure that fails leaves nothing
//     behind, and closures never conflict.
//   - An Update returns only when its writes, and every write before them,
//     are durable in the log and visible to View: a caller always reads its
//     own writes. Exceptions return once applied: UpdateEager and
//     UpdateUrgent (renewals and reaps, which a restart makes good), and
//     writes made under a Barrier, whose caller waits once for all of them
//     (barrier.go).
//   - Reads are linearizable: a View holds every write answered before it
//     began. Writes reach readers once durable, so nothing a reader sees
//     can be lost by a power failure, with one exception: UpdateEager's
//     writes are shown once applied (shown.go), since what a restart does
//     to them (a renewed lease gets its full TTL afresh) never undoes what
//     a reader saw. One is shown early only when readers already see every
//     key it writes as it found them; otherwise it is answered and shown
//     once durable, so it never shows an earlier write (the claim it
//     renews) before that one is durable. A write shown early is taken off
//     the shown list as its segment becomes visible, under one lock, so a
//     reader never misses it; if an earlier segment then fails, the store
//     stops taking writes and readers go on seeing it.
//   - A closure that fails is answered only once every write it could have
//     read is durable (under a Barrier, the barrier waits for them): a
//     refusal never rests on a write that a crash could lose or that a
//     reader cannot see yet.
//   - A failed commit (a log or Badger write; an etcd transaction that
//     times out, finds no quorum or finds the guard false; a PostgreSQL
//     transaction that fails, times out, loses its connection or finds
//     the guard false) stops the store from taking writes: Healthy is
//     false and every write waiting or queued is answered
//     fault.ErrUnavailable. It is never retried behind the caller's back
//     into a different order.
//
// Badger:
//   - Durability uses no knowledge of Badger's files: the log is ours (one
//     write and one fdatasync of a preallocated segment per group; a segment
//     the log has dropped becomes a later one, renamed, not rewritten; its
//     old records are never read back: wal.go). Badger's
//     commits are not synced; a log segment is removed only once every
//     record in it is in a table Badger has flushed (its public Tables lists
//     each table's highest version, and memtables flush in commit order:
//     flushed.go), and every value stays in those tables (a value of 1 MiB,
//     which Badger would put in its unsynced value log, is refused). At
//     open, what is left of the log is applied to Badger again, in order,
//     up to the first torn record, and Badger is closed and opened once to
//     flush it (by Reopen when the caller says it will call it,
//     Options.Reopens, so a start opens Badger twice at most); then the
//     segments it replayed are deleted (never recycled: what a crash left
//     past their last intact record is unknown), and the log appends to a
//     segment of its own. Start refuses to run before that flush.
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
//   - Reopen, called once before Start (graphstore.Open calls it after its
//     rebuild's scan of every record when the caller sets ReleaseScanPages,
//     as core.Open does, and opens the store with Options.Reopens then),
//     closes Badger and opens it again: the
//     scan leaves every page of Badger's tables mapped into the process and
//     counted in its resident memory (~180 MiB at a million nodes), though
//     the records it needs now live in the graph's memory. The pages stay
//     in the page cache; only what is read later is mapped again.
//   - After a failed log or Badger write a restart recovers from the log.
//   - Opening removes zero-length *.mem and *.vlog files before Badger sees
//     them (recovery.go): Badger creates each such file and sizes it in a
//     second step (at a memtable rotation, at every open), and deletes one
//     by truncating it and then removing it, so a crash in between (kill -9
//     during a start) leaves one; it can hold no data, and Badger refuses
//     to open with it present. This and the memtable files' preallocation
//     (below) are the places Tether looks at Badger's files.
//
// A disk that fills (Badger; space.go, memtables.go):
//   - Badger writes its memtables, and makes its tables, through memory-
//     mapped files. A page the filesystem has no block for is not an error
//     Badger could return but a SIGBUS that kills the process (the first
//     commit into an unallocated page of the sparse memtable file did it on
//     a full tmpfs); our log cannot meet it (its segments are written
//     through and allocated before use). Two measures keep Badger off it:
//   - A reserve (DefaultDiskReserve, 512 MiB): the free space of the data
//     directory's filesystem is read after every group made durable and
//     every 250 ms. Below the reserve, writes are refused before they reach
//     the writer (fault.DiskFull); renewals and the reaper's expiries (the
//     eager writes) are taken until half of it, so held leases do not lapse
//     because the disk filled; below half, every write is refused. Refused
//     writes were never applied: nothing is acknowledged that is not
//     durable, and nothing is kept that was refused. Writes queued before
//     the refusal go on into the log, whose segments are allocated already.
//     The state is left, without a restart, once free space passes its line
//     by an eighth of the reserve. What the reserve holds: Badger's flushes
//     of both memtables, the log's next segment, compactions' new tables.
//   - Badger's memtable files are allocated before Badger writes them: the
//     current one at open, and the next one made beforehand, empty with
//     its blocks allocated past its end, under the name Badger will open
//     for it (it sizes an empty file, and the blocks stay). The applier
//     prepares the next after every commit that made Badger take the last.
//     So the memtable, written on every commit, never faults, even when
//     another process takes the last block; while the next file cannot be
//     prepared every write is refused. The tables Badger makes in flushes
//     and compactions are not ours to allocate: the reserve is their room,
//     and a process that takes all of it while Badger makes one can still
//     crash the server.
//   - Opening needs half the reserve free (the replay writes the memtable
//     before it can be allocated), and says so instead of dying.
//
// Memory (mem.go, mem_read.go):
//   - A MemDisk outlives the Stores opened on it, one at a time. Its synced
//     tree is what survives a crash; a group is written (unsynced), its
//     sync waits out the disk's delay, and then all of it is synced,
//     applied and acknowledged at once. Readers read a copy-on-write clone
//     of the synced tree, so nothing unsynced is ever read.
//   - Crash ends the life of the Store opened on the disk: its writes fail
//     from then on and its readers keep the tree they had. Of the group it
//     was syncing a prefix of segments survives, chosen by the caller, as
//     our log replayed up to its first torn record keeps one: never a part
//     of a segment, never a later segment without the earlier ones.
//   - FailNext fails the next group's write before anything is written:
//     the store breaks, as after a failed log write.
//
// etcd (etcd.go, etcd_write.go, etcd_read.go, etcd_log.go):
//   - Keys live at Prefix + "d/" + key; a value is an envelope holding its
//     expiry (etcd_write.go). Reads leave out expired keys, as Badger does;
//     a TTL key is put on the etcd lease of its expiry bucket (a minute),
//     so etcd deletes it a minute or two after it expired; a later plain
//     write detaches it.
//   - Every transaction carries the Guard (ownership): a deposed owner can
//     never commit. A failed guard breaks the store and runs OnDeposed once.
//   - Consecutive segments that fit one transaction (MaxTxnOps writes,
//     MaxRequestBytes less headroom) commit as one. A segment that does not
//     fit keeps all-or-nothing by the commit log in etcd (etcd_log.go):
//     chunks, then a marker (the durable point), then the writes, then the
//     log is deleted; opening a store replays marked records and deletes
//     unmarked chunks. Transactions etcd answers "unavailable", or that do
//     not answer in a quarter of Timeout, are tried again within Timeout:
//     each is idempotent, and the logger runs one at a time.
//   - With Pipeline > 1 (etcd_pipeline.go, pipeline.go) up to Pipeline
//     groups are in flight at once. etcd may commit them in any order, so
//     each transaction carries the writes of the ones in flight before it
//     and commits only if the key Prefix + "chain" is below its number,
//     setting it: etcd always holds a prefix of the writer's order, a later
//     transaction never commits without an earlier one's writes, and one
//     overtaken by a later one is durable through it. Groups are answered
//     in order, each once it and every earlier one committed; the first
//     failure breaks the store. A group that needs the commit log waits for
//     everything in flight and commits alone.
//   - Stores may share an EtcdBatcher (etcd_batcher.go), which sends the
//     commits that meet in it as one etcd transaction of nested ones, each
//     under its own store's guard: a false guard fails that store's part
//     only. Two parts of one store prefix never share a transaction.
//   - Reads are linearizable; a View or a writer's segment reads at the
//     revision of its first read; a scan reads pages of 256 keys; Snapshot
//     reads every page at one revision.
//   - One value may hold at most MaxRequestBytes less headroom; one closure
//     at most what the commit log takes (64 MiB, less a fifth).
//   - Durable means committed by a quorum of etcd: a server's crash loses
//     nothing acknowledged, and whoever opens the store next (the new
//     owner) replays the commit log first.
//
// PostgreSQL (postgres.go, postgres_write.go, postgres_read.go,
// postgres_expiry.go, postgres_sql.go):
//   - A key is a row (shard, k bytea, v bytea, expires_at unix seconds, 0
//     for none) of <schema>.kv (pgschema); bytea compares bytewise, so the
//     table's order is the store's.
//   - A group is one transaction (several, in order, only past 96 MiB or
//     128 Ki keys; a crash between them keeps a prefix of the group),
//     sent as one pipeline in one round trip: BEGIN, the guard, one
//     multi-row upsert (unnest of arrays, keys in byte order), one
//     multi-row delete (= ANY), COMMIT. An error anywhere skips the rest
//     and rolls back.
//   - The guard (PostgresGuard, ownership): the transaction first locks
//     its shard's row of shard_owners FOR SHARE where owner and epoch are
//     the store's, and its writes are conditioned on that row; a takeover
//     (UPDATE ... epoch = epoch + 1) waits for every write holding the lock,
//     and a write after it finds no row, commits nothing and breaks the
//     store; OnDeposed runs once.
//   - A commit whose outcome is unknown (the connection lost, or Timeout
//     passed, after the batch was sent) breaks the store and is never sent
//     again: the transaction committed whole or not at all, and readers
//     and the next owner read whichever it was. Only a transaction that
//     certainly did not run is sent again, on another connection: one whose
//     send failed before a byte left (pgconn.SafeToRetry), or whose BEGIN
//     the server answered with an error (an idle connection it had ended).
//     A reader's first read is begun again the same way (it is read-only).
//   - Reads: a reader (a View's, a writer segment's, Snapshot's) reads in
//     a REPEATABLE READ READ ONLY transaction on a connection of its own,
//     begun with its first read in one round trip, so it reads one
//     instant; the writer never waits for a reader's end (discard rolls
//     back on a goroutine of its own). Scans read pages of 256 keys.
//     The pool must have room for the commits beside the readers in
//     flight. Expired keys are left out by the queries (expires_at != 0
//     and <= now, from this process's clock, as Badger does), and deleted
//     in the background in batches of 1000 (postgres_expiry.go), which
//     lock rows FOR UPDATE SKIP LOCKED so the cleaner never waits for a
//     write, and delete only rows still expired.
//   - One value may hold what Badger takes (1 MiB less a byte); one
//     closure 64 Ki keys and 64 MiB.
//   - Stores may share a PostgresBatcher (postgres_batcher.go), which
//     sends the commits that meet in it as one transaction in one round
//     trip, each store's part (postgres_part.go) its guard FOR SHARE and
//     writes conditioned on the guard's row: a guard that finds no row
//     makes its part write nothing and fails that store only, the others
//     commit. A store still has one commit in flight, so its order holds;
//     a transaction whose outcome is unknown breaks every store in it.
//   - Nothing rests on LISTEN/NOTIFY or advisory locks (pgschema's runner
//     uses one for migrations only), so the SQL runs on CockroachDB and
//     YugabyteDB too (postgres_sql.go lists what it uses).
package kv
