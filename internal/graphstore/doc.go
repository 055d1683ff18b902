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
//   - the store and its transactions: store.go, tx.go, changes.go (what a
//     transaction hands the derived state), trace.go;
//   - nodes: node.go, node_query.go, node_list.go, subject.go,
//     idempotency.go; the claim rule and blockers: claimable.go,
//     blockers.go;
//   - edges: edge.go, edge_list.go; events and comments: event.go,
//     node_events.go, comment.go; queues: queue_record.go; blobs:
//     blob_records.go;
//   - the derived state: state.go, node_index.go, interned.go, lists.go,
//     held.go, finished.go, ready_*.go, rebuild*.go, and the queue
//     observations fold makes of it (queue_meter.go);
//   - upkeep: retention.go, check*.go, format_check.go.
//
// What lives in memory, derived from the records (state.go, rebuild.go),
// kept small because every node holds it (TestQueuedNodeMemory measures it
// per queued node):
//   - every node's state, in one table entry found through a map keyed by a
//     hash of its ref (node_index.go): what many nodes share (queue, type,
//     target, parent, holder, label set) as interned atoms of one word
//     (interned.go), its place in the list indexes (by tenant in list
//     order, by status, by queue and status, by parent, live leases by id
//     and by holder; lists.go, kept off the writer), its blocker counts
//     (unmet depends_on targets, unfinished children), how many live
//     depends_on edges point at it, and, while it runs, its encoded record,
//     so a running node's hot paths never read the store; a queued or open
//     node's record is read from the store (through the writer's
//     transaction, once per transaction) when it is claimed, read or
//     changed, so the backlog's records live on disk (on an engine whose
//     reads are round trips, etcd, every live node's record stays in
//     memory instead: Store.liveRecords);
//   - every live edge, from both ends;
//   - the fences of deleted nodes;
//   - the ready mirror (ready_mirror.go, ready_filter*.go): exactly the
//     queued nodes with no blocker, per tenant-queue in claim order, indexed
//     by target, type and label so a filtered claim-next finds its first
//     match in O(log n); its trees hold the table's entries themselves, one
//     tree per order, and none in age order: a queue's oldest claimable
//     node is the first of one of its claim indexes' priority bands, a seek
//     per band (ready_oldest.go); delayed ones wait in a deadline heap for a
//     timer;
//   - each tenant's last event seq (read from the store on first use);
//   - when each live node last became ready or was claimed (nodeState.since,
//     stamped by table.fold), from which a QueueMeter is told how long claims
//     waited and runs lasted (queue_meter.go).
//
// Rebuilding: Open scans the node records (one goroutine reads them, another
// decodes them, in key order), then the live edges (counting blockers and
// dependents), then the kept fences, and indexes every node (the lists and
// the ready mirror built side by side, from the nodes sorted once, the
// mirror's kinds of trees each filled by a goroutine of its own: load),
// inside the caller's Options.DuringRebuild (serve turns the proportional
// GC off there, with the soft memory limit as its guard); then, when the
// caller sets Options.ReleaseScanPages (server.Open does), it has kv reopen
// its engine (kv.Store.Reopen), which lets go of the table pages the scan
// mapped in, before the writer starts. tether check (check.go) derives the
// same state and compares it with a recount from the records.
//
// Invariants:
//   - Every record of a tenant lives under a key that carries the tenant id
//     right after the record tag (records/keys.go), so no range over one
//     tenant's keys can reach another's. Only start-up ranges across tenants.
//   - Writes run on kv's single writer goroutine. A transaction changes the
//     in-memory state through its own copies (Tx.mut, Tx.edges); Tx.apply
//     hands them, as a change set (changes.go), to table.fold, which folds
//     them into the table and the ready mirror only when it succeeds,
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
//     records (nodeState.record) are the writer's alone.
//   - An entry in the ready mirror's trees changes its state only on the
//     writer, under the mirror's lock, after it has left the trees when the
//     change moves it (readyMirror.trackLocked): a walk, under the same
//     lock, never sees an entry change in a tree.
//   - The list indexes never lag a list: table.fold only marks the entries it
//     changed, and every walk of the list indexes first moves each marked
//     entry to where its state puts it now (a background loop does the same
//     every 50 ms), so a list holds every commit before it began.
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
package graphstore
