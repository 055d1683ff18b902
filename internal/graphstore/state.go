package graphstore

// The in-memory state: what the store knows of every node without reading
// its record (its place in every index, its blocker counts, its live edges)
// and, while a node runs, the record itself. It is derived from the
// records, rebuilt at open (rebuild.go), changed by write transactions
// through their own copies (Tx.mut) and folded in on the writer when a
// transaction succeeds (Tx.apply, through its change set: changes.go), so a failed transaction leaves nothing.
//
// The writer reads it without a lock (it alone changes it); readers outside
// the writer (readiness in a GET) take mu for reading. The list indexes are
// apart, under their own lock, and catch up with the table when a list
// walks them (lists.go).

import (
	"sync"
	"time"
	"unique"

	"github.com/tether-run/tether/internal/records"
)

// nodeRef names a node across tenants.
type nodeRef struct{ tenant, id string }

// nodeState is what the store keeps in memory of one node.
//
// Every node holds one, inside its table entry, so it is kept small: what
// many nodes share (queue, type, target, parent, holder, label set) as
// interned atoms of one word (interned.go), the status in a byte, counts in
// 32 bits, the record behind a pointer (only a running node has one).
type nodeState struct {
	order  [records.OrderKeyLength]byte
	queue  atom
	parent atom
	typ    atom
	target atom
	labels atom  // the label set (labelSetOf; eachLabel)
	holder atom  // the live lease's identity (zero for none)
	runAt  int64 // unix ms, rounded up (runAtMS); 0 = none
	// changed is when a finished node last changed (unix ns), for
	// retention; 0 while the node is not finished.
	changed int64
	// since is when the node last became ready or was claimed (unix ns;
	// stamped by table.fold, queue_meter.go), so a claim knows how long the
	// node waited and an ended run how long it ran. Rebuilt from the
	// record at open: the lease's claimed_at, else updated_at.
	since int64
	// record is the encoded record while the node runs, so the hot paths of
	// a running node (renew, complete, fail, release) never read the store;
	// nil otherwise. A queued or open node's record is read from the store
	// when it is claimed, read or changed (the writer reads through its
	// transaction, and Badger's block cache holds the hot ones), so a
	// backlog of millions does not live in memory (but with
	// Store.liveRecords, kept while the node is live). Never changed in place
	// (a change points at a new one), so copies of the state share it.
	record *[]byte

	deps       int32 // live depends_on edges whose target is not satisfied
	children   int32 // children not terminal
	dependents int32 // live depends_on edges pointing at the node
	status     statusCode
	// hasBlobs says the record names blobs, so a change reads the stored
	// record to move their reference counts.
	hasBlobs bool
}

// ready reports whether the node waits in its queue with nothing blocking it:
// the part of the claimable rule the ready index keeps (claimable.go).
func (st *nodeState) ready() bool {
	return st.status == codeQueued && st.queue != (atom{}) && !st.blocked()
}

// edgeSlot names a live edge from one end: its type and the node at the other.
type edgeSlot struct{ typ, peer string }

// liveEdge is a live edge in memory: its record and the seq of its
// edge_added event.
type liveEdge struct {
	e   *records.Edge
	seq uint64
}

// nodeEdges are a node's live edges, from its end: out from it, in to it.
type nodeEdges struct {
	out map[edgeSlot]*liveEdge
	in  map[edgeSlot]*liveEdge
}

// outEdges and inEdges are the node's live edges from its end (nil maps for
// none).
func (e *nodeEntry) outEdges() map[edgeSlot]*liveEdge {
	if e.edges == nil {
		return nil
	}
	return e.edges.out
}

func (e *nodeEntry) inEdges() map[edgeSlot]*liveEdge {
	if e.edges == nil {
		return nil
	}
	return e.edges.in
}

// addOut and addIn file a live edge in the node's maps, each made on first
// use.
func (e *nodeEntry) addOut(slot edgeSlot, le *liveEdge) {
	if e.edges == nil {
		e.edges = &nodeEdges{}
	}
	if e.edges.out == nil {
		e.edges.out = map[edgeSlot]*liveEdge{}
	}
	e.edges.out[slot] = le
}

func (e *nodeEntry) addIn(slot edgeSlot, le *liveEdge) {
	if e.edges == nil {
		e.edges = &nodeEdges{}
	}
	if e.edges.in == nil {
		e.edges.in = map[edgeSlot]*liveEdge{}
	}
	e.edges.in[slot] = le
}

// dropEdgesIfNone lets the maps go once the node has no live edge left.
func (e *nodeEntry) dropEdgesIfNone() {
	if e.edges != nil && len(e.edges.out) == 0 && len(e.edges.in) == 0 {
		e.edges = nil
	}
}

// nodeEntry is one node in the table.
type nodeEntry struct {
	ref   nodeRef
	st    nodeState
	edges *nodeEdges // nil while the node has none

	// Under the table's mu: marked says the entry waits in table.marked
	// for the list indexes to catch up with it (lists.go).
	marked bool
	// Under the ready mirror's mu: where the entry is filed in the ready
	// mirror (mirrorNone, mirrorDelayed, mirrorClaimable), whose trees
	// hold the entry itself.
	mirror uint8
	// Under lists.mu: the order the entry sits at in the list indexes
	// (their trees compare it).
	listedOrder [records.OrderKeyLength]byte
}

// table is every node of every tenant.
type table struct {
	mu    sync.RWMutex
	nodes nodeIndex
	// marked lists the entries changed since the list indexes last caught
	// up with the table, each once, with where they are listed (lists.go).
	marked []markedEntry
	// lists are the list indexes, under their own locks (lists.go).
	lists *lists
	// fences keeps the last fence of each deleted node id, so a node
	// re-created under it continues the numbers.
	fences map[nodeRef]uint64
	// finished queues each tenant's finished nodes for retention
	// (finished.go); only the writer touches it.
	finished map[string]*finishedQueue
	// blobs is the blob state (blob_records.go), under its own lock.
	blobs *blobTable
}

func newTable() *table {
	return &table{nodes: newNodeIndex(0), lists: newLists(), fences: map[nodeRef]uint64{}, finished: map[string]*finishedQueue{}, blobs: newBlobTable()}
}

// mark queues e for the list indexes to catch up with (call with mu held,
// before changing e.st or taking e out of nodes; isNew for an entry just
// made). An entry already in the table and not marked is listed under the
// key its state gives: the last catch-up put it there, and nothing has
// changed it since.
func (t *table) mark(e *nodeEntry, isNew bool) {
	if e.marked {
		return
	}
	e.marked = true
	m := markedEntry{e: e}
	if !isNew {
		m.from, m.listed = listKeyOf(&e.st), true
	}
	t.marked = append(t.marked, m)
}

// stateOf fills a nodeState from a record; it keeps the record of a running
// node, and of every live node with liveRecords (Store.liveRecords).
func stateOf(n *records.Node, record []byte, liveRecords bool) nodeState {
	st := nodeState{
		status: codeOf(n.Status),
		queue:  atomOf(n.Queue),
		parent: atomOf(n.Parent),
		typ:    atomOf(n.Type),
		target: atomOf(n.Target),
		labels: labelSetOf(n.Labels),
	}
	copy(st.order[:], n.Order())
	st.since = n.UpdatedAt.UnixNano()
	if n.Lease != nil {
		st.holder = atomOf(n.Lease.By)
		st.since = n.Lease.ClaimedAt.UnixNano()
	}
	if n.RunAt != nil {
		st.runAt = runAtMS(*n.RunAt)
	}
	st.hasBlobs = len(n.Blobs) > 0
	switch {
	case n.Status.Terminal():
		st.changed = n.UpdatedAt.UnixNano()
	case n.Status == records.StatusRunning || liveRecords:
		st.record = &record
	}
	return st
}

// withRecord returns st moved to the record n (counts kept).
func (st nodeState) withRecord(n *records.Node, record []byte, liveRecords bool) nodeState {
	next := stateOf(n, record, liveRecords)
	next.deps, next.children, next.dependents = st.deps, st.children, st.dependents
	return next
}

// intern returns the one copy of a string that many nodes share (a queue, a
// type, a holder), so a million nodes do not hold a million copies of it.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// runAtMS is run_at in unix ms for the ready mirror, rounded up: the mirror
// offers a node once its run_at in ms has come, and the claim checks the
// record's run_at to the ns. Rounded down, a node due at .6 ms into a
// millisecond was offered at .2, refused by the claim as not yet due, and
// the long poll it had woken waited for a change that had already happened
// (up to its whole wait).
func runAtMS(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		ms++
	}
	return ms
}

// btreeDegree is the degree of the in-memory indexes' B-trees (nodes of up
// to 63 items). Scenario (b) moves every job through about a dozen of them;
// against 16, degree 32 used 74-76 instead of 79-83 µs of server CPU per job
// (A/B, three 8 s runs each; 8 was no better than 16, 64 and 128 no better
// than 32), and (g)'s RSS did not move.
const btreeDegree = 32
