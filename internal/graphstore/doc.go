// Package graphstore is Tether's model: nodes, edges (live and retired),
// events, comments, queue settings, idempotency and blob records, stored in a
// kv.Store (the storage engine) as the records package lays them out. The
// records other packages own (tenants, API keys, workers, messages, schedules
// and their runs) commit in its transactions but are reached through
// Tx.Records (records.Txn), not through its model. It knows nothing of HTTP.
// Of leases it keeps what is stored and indexed (a node's live assigned edge
// in its record, live leases by id and holder); what a claim, renewal, release
// or expiry decides is package leasing's.
//
// What is stored, and only that (records/keys.go): node records (each with its
// live assigned edge, so a claim and a completion write no edge key, and with
// pointers to the event groups of the transactions that wrote it, so they
// write no pointer key either: node_events.go), live and retired edges,
// deleted nodes' last fences, event groups with per-node pointers, comments
// and the small records. Every record is MessagePack from a generated codec
// under one format version (records.FormatVersion, checked at open:
// format_check.go): the model's own (package records) as tuples of variable
// length, so a field is appended without a new format and a record written
// before it reads with it zero, and the records other packages own as maps
// in their owners' generated codecs (records/foreign.go). Beside the format,
// a fields marker records how many fields of each tuple the releases that
// opened the store write. Open takes a directory of format 5 as it is (no
// record rewritten, only the markers) and refuses, naming both versions, an
// older format (run the previous release on it first), a newer one, and a
// store holding more fields of a record than this release knows, which it
// would drop on rewriting it (docs/upgrades.md). An event's data is a
// MessagePack map; the writer's hot paths build it already encoded, key by
// key (records.Data).
//
// Its files, by what they serve:
//   - the store and its transactions: store.go, tx.go, trace.go; what a
//     transaction hands the derived state is its change set
//     (indexes.ChangeSet, built in Tx.apply);
//   - nodes: node.go, node_query.go, node_list.go, idempotency.go,
//     unique.go (a create's unique key records), lapses.go (the nodes at
//     rest with a start_by, by instant, for the lapse reaper);
//     subjects (who may be named, which characters, look-alikes of the
//     reserved names): subject.go, subject_chars.go, lookalike.go; the
//     claim rule and blockers: claimable.go, blockers.go;
//   - edges: edge.go, edge_list.go; events and comments: event.go,
//     node_events.go, comment.go; queues: queue_record.go; blobs:
//     blob_records.go;
//   - the doors to the derived state: derived.go (the ready mirror's and
//     the queue counts' methods of Store and Tx, and the store's side of
//     the rebuild);
//   - upkeep: retention.go, check*.go, format_check.go. tether check and
//     retention stay here because they need both the model and the derived
//     state: check derives the state afresh and compares it with a recount
//     from the records, retention takes the finished nodes indexes queues.
//
// What lives in memory, derived from the records, is package indexes': every
// node's state in one table entry (its interned names, its place in the
// list indexes, its blocker counts and, while it runs, its record), every
// live edge from both ends, the fences of deleted nodes, the finished nodes
// in the order retention takes them, and the ready mirror (exactly the
// queued nodes with no blocker, per tenant-queue in claim order, so a
// filtered claim-next finds its first match in O(log n)); its doc.go says
// how and what it keeps. The store keeps beside it what is the model's:
// each tenant's last event seq (read from the store on first use), the blob
// state (blob_records.go), the retention marks and the queue settings.
//
// Rebuilding: Open derives the state (Store.rebuild: indexes.Derive, with
// the blocker rule of blockers.go, then the blob state from the same
// snapshot, then the finished queues and the retention marks) inside the
// caller's Options.DuringRebuild (serve turns the proportional GC off there,
// with the soft memory limit as its guard); then, when the caller sets
// Options.ReleaseScanPages (server.Open does), it has kv reopen its engine
// (kv.Store.Reopen), which lets go of the table pages the scan mapped in,
// before the writer starts. tether check (check.go) derives the same state
// and compares it with a recount from the records.
//
// Invariants:
//   - The lapses heap holds every node at rest with a start_by as of its
//     last write (filed on commit, and at open), so the node that lapses
//     next is its top; entries left by nodes claimed, requeued or deleted
//     since are hints a reaper drops (the record decides).
//   - Every record of a tenant lives under a key that carries the tenant id
//     right after the record tag (records/keys.go), so no range over one
//     tenant's keys can reach another's. Only start-up ranges across tenants.
//   - Writes run on kv's single writer goroutine. A transaction changes the
//     in-memory state through its own copies (Tx.mut, Tx.edges); Tx.apply
//     hands them, as a change set (indexes.ChangeSet), to Table.Fold, which
//     folds them into the table and the ready mirror only when it succeeds,
//     before any other hook and before the next transaction runs, so the
//     writer always sees exactly what committed before it. The derived
//     state reads nothing of a Tx but its change set.
//   - Readers (View) read records from a snapshot that holds every write
//     acknowledged before it began: what is durable, and the renewals
//     answered before they are durable (UpdateEager; a restart only ever
//     lengthens a live lease, so what a reader saw of one is never taken
//     back). A renewal of a claim not yet durable is answered and shown
//     only once that claim is, so no claim is seen early. The in-memory
//     indexes readers walk may be a few commits ahead, so every list
//     re-reads each record and checks its filters on it. The in-memory
//     records (indexes.NodeState.Record) are the writer's alone. The list
//     indexes never lag a list: each catches up before it walks, so a list
//     holds every commit before it began (package indexes' invariants).
//     Nothing not yet durable reaches a reader but those renewals: event
//     long polls are woken by OnDurable hooks (a renewal emits no event).
//   - Event seqs are handed out on the writer in commit order, so seq
//     strictly increases per tenant; a transaction's events are stored as one
//     group under the seq of its last event (consecutive groups when they
//     encode larger than maxEventGroupBytes), with one pointer per node: in the
//     node's record when the transaction wrote it (at most maxRecordPointers
//     there), else a key; NodeEvents merges the two in seq order, and a
//     deleted node's record pointers become keys.
//   - At most one live edge per (from, type, to); retiring moves it to
//     history under the seq of its edge_added event, never erasing it.
//   - A depends_on or parent_of edge that would close a cycle through either
//     type is refused.
//   - A deleted node's last fence is kept, so a node re-created under its id
//     continues the fence numbers.
//   - Flow control (flow_state.go, flow_claim.go, flow_config.go): the
//     slots held per concurrency key are never stored. A node holds its
//     keys' slots while it runs, or after a hand-off until the identity it
//     names claims it (indexes.HoldsSlots); the counts are derived from
//     the node records at open and moved by each committed transaction's
//     own delta, which its later claims read, so no claim, in any
//     transaction, takes a key past its limit, across restarts and
//     takeovers. A node's keys never change while it holds slots.
//     Start-rate buckets are in memory only and start empty, so a
//     restart never grants more than a burst. A budget's spend is written
//     in the transaction that records the usage it counts.
package graphstore
