// Package indexes is the derived in-memory state of Tether's model: the
// ready mirror, the list indexes, the node index and interning, the live
// edges, the fences of deleted nodes and the finished nodes waiting for
// retention, rebuilt from the records at open (Derive) and fed, on the
// writer, by the change set of each committed transaction (ChangeSet,
// Table.Fold). It reads records (package records, through kv) and decides
// nothing: the transactions over nodes, edges, events and blockers, and the
// claim rule, are package graphstore's, which imports this package (never
// the other way) and hands Derive the one rule it needs of the model, how a
// live edge counts as a blocker.
//
// Its files: state.go (NodeState, NodeEntry, the Table, live edges),
// changes.go (the change set and Table.Fold), node_index.go, interned.go,
// lists.go and held.go (the list indexes), finished.go, ready_mirror.go,
// ready_track.go, ready_filter.go, ready_filter_wait.go, ready_oldest.go
// and ready_load.go (the ready mirror), rebuild.go and rebuild_scan.go
// (Derive), queue_meter.go (what Table.Fold tells a QueueMeter).
//
// What lives in memory, kept small because every node holds it
// (graphstore's TestQueuedNodeMemory measures it per queued node):
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
//     changed, so the backlog's records live on disk (with Derive's
//     liveRecords, set on an engine whose reads are round trips, etcd,
//     every live node's record stays in memory instead);
//   - every live edge, from both ends;
//   - the fences of deleted nodes;
//   - each tenant's finished nodes in the order they finished, for
//     retention (finished.go);
//   - the ready mirror (ready_mirror.go, ready_filter*.go): exactly the
//     queued nodes with no blocker, per tenant-queue in claim order, indexed
//     by target, type and label so a filtered claim-next finds its first
//     match in O(log n); its trees hold the table's entries themselves, one
//     tree per order, and none in age order: a queue's oldest claimable
//     node is the first of one of its claim indexes' priority bands, a seek
//     per band (ready_oldest.go); delayed ones wait in a deadline heap for a
//     timer;
//   - when each live node last became ready or was claimed (NodeState's
//     since, stamped by Table.Fold), from which a QueueMeter is told how
//     long claims waited and runs lasted (queue_meter.go).
//
// Rebuilding (Derive): it scans the node records (one goroutine reads them,
// another decodes them, in key order: rebuild_scan.go), then the live edges
// (counting blockers and dependents by the caller's rule), then the kept
// fences, and indexes every node (the lists and the ready mirror built side
// by side, from the nodes sorted once, the mirror's kinds of trees each
// filled by a goroutine of its own: ReadyMirror.load).
//
// Invariants:
//   - Only the writer changes the state, and only by folding a committed
//     transaction's change set (Table.Fold), before any other hook and
//     before the next transaction runs, so the writer always sees exactly
//     what committed before it. The state reads nothing of a transaction
//     but its change set. The writer reads the table without a lock (it
//     alone changes it); readers outside it take Table.Mu for reading.
//   - The in-memory records (NodeState.Record) are the writer's alone.
//   - An entry in the ready mirror's trees changes its state only on the
//     writer, under the mirror's lock, after it has left the trees when the
//     change moves it (ReadyMirror.trackLocked): a walk, under the same
//     lock, never sees an entry change in a tree.
//   - The list indexes never lag a list: Table.Fold only marks the entries
//     it changed, and every walk of the list indexes first moves each marked
//     entry to where its state puts it now (a background loop, SyncLoop,
//     does the same every 50 ms), so a list holds every commit before it
//     began. They may hold a few commits more than a reader's snapshot, so
//     every list re-reads each record and checks its filters on it.
//   - The queue counts readers are shown move only once the change is
//     durable (ShowCounts, from the caller's durable hook).
package indexes
