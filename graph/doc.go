// Package graph is Tether's store: nodes, edges (live and retired), their
// indexes, events, comments, queue settings, worker records, tenant records
// and idempotency records, in one Badger DB.
// It knows nothing of HTTP or of what a lease means.
//
// Invariants:
//   - Every record of a tenant lives under a key that carries the tenant id
//     right after the record tag (see keys.go), so no range over one tenant's
//     keys can reach another's. Only start-up machinery (the live-lease scan)
//     ranges across tenants.
//   - Exactly one goroutine writes (Store.writeLoop). Each Update closure runs
//     in its own Badger transaction: a failed closure leaves nothing behind,
//     closures never conflict with each other, and event sequence numbers are
//     handed out in commit order, so seq strictly increases per tenant.
//   - A durable Update is acknowledged only after an fsync that covers its
//     commit: db.Sync for the active memtable's WAL, and an fsync of every WAL
//     file of a memtable that rotated out since (walSyncer). Concurrent writers
//     share that fsync (group commit).
//   - A node's index entries (list order, by status, by queue, by parent, live
//     lease) are rewritten by NodeInsert, NodePut and NodeDelete in the same
//     transaction as the record; NodePutQuiet changes lease bookkeeping only
//     and touches no index.
//   - At most one live edge per (from, type, to); retiring an edge moves it to
//     history under the seq of its edge_retired event, never erasing it.
//   - A depends_on or parent_of edge that would close a cycle through either
//     type is refused.
//   - The ready index holds exactly the queued nodes with no unmet depends_on
//     target and no unfinished child; blocker counts live in their own key and
//     move in the same transaction as the status or edge change that causes
//     them. The in-memory mirror (claim order per tenant-queue, run_at delays
//     promoted by a timer) is rebuilt from the index at open and updated by
//     commit hooks on the writer, so claim-next running on the writer always
//     sees what the transaction sees.
//   - A deleted node's last fence is kept, so a node re-created under its id
//     continues the fence numbers.
//
// The store needs only ordered keys, prefix range scans and serializable
// transactions, so a distributed ordered KV could stand in for Badger.
package graph
