package indexes

// The in-memory state: what the store knows of every node without reading
// its record (its place in every index, its blocker counts, its live edges)
// and, while a node runs, the record itself. It is derived from the
// records, rebuilt at open (rebuild.go: Derive), changed by write
// transactions through their own copies (graphstore's Tx.mut) and folded in
// on the writer when a transaction succeeds (through its change set:
// changes.go, Table.Fold), so a failed transaction leaves nothing.
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

// NodeRef names a node across tenants.
type NodeRef struct{ Tenant, ID string }

// NodeState is what the store keeps in memory of one node.
//
// Every node holds one, inside its table entry, so it is kept small: what
// many nodes share (queue, type, target, parent, holder, label set) as
// interned atoms of one word (interned.go), the status in a byte, counts in
// 32 bits, the record behind a pointer (only a running node has one).
type NodeState struct {
	order  [records.OrderKeyLength]byte
	queue  atom
	parent atom
	typ    atom
	target atom
	labels atom  // the label set (labelSetOf; eachLabel)
	holder atom  // the live lease's identity (zero for none)
	runAt  int64 // unix ms, rounded up (runAtMS); 0 = none
	// Changed is when a finished node last changed (unix ns), for
	// retention; 0 while the node is not finished.
	Changed int64
	// since is when the node last became ready or was claimed (unix ns;
	// stamped by Table.Fold, queue_meter.go), so a claim knows how long the
	// node waited and an ended run how long it ran. Rebuilt from the
	// record at open: the lease's claimed_at, else updated_at.
	since int64
	// Record is the encoded record while the node runs, so the hot paths of
	// a running node (renew, complete, fail, release) never read the store;
	// nil otherwise. A queued or open node's record is read from the store
	// when it is claimed, read or changed (the writer reads through its
	// transaction, and Badger's block cache holds the hot ones), so a
	// backlog of millions does not live in memory (but with
	// Derive's liveRecords, kept while the node is live). Never changed in place
	// (a change points at a new one), so copies of the state share it.
	Record *[]byte

	Deps       int32 // live depends_on edges whose target is not satisfied
	Children   int32 // children not terminal
	Dependents int32 // live depends_on edges pointing at the node
	Status     StatusCode
	// HasBlobs says the record names blobs, so a change reads the stored
	// record to move their reference counts.
	HasBlobs bool
	// HoldsSlots says the node counts against its concurrency keys'
	// limits: it runs, or waits after a hand-off (records.Node.SlotHeld).
	HoldsSlots bool
}

// ready reports whether the node waits in its queue with nothing blocking it:
// the part of the claimable rule the ready index keeps (graphstore's claimable.go).
func (st *NodeState) ready() bool {
	return st.Status == codeQueued && st.queue != (atom{}) && !st.Blocked()
}

// Blocked reports whether the node has an unmet dependency or an unfinished
// child, by its blocker counts.
func (st *NodeState) Blocked() bool { return st.Deps > 0 || st.Children > 0 }

// EdgeSlot names a live edge from one end: its type and the node at the other.
type EdgeSlot struct{ Type, Peer string }

// LiveEdge is a live edge in memory: its record and the seq of its
// edge_added event.
type LiveEdge struct {
	Edge *records.Edge
	Seq  uint64
}

// nodeEdges are a node's live edges, from its end: out from it, in to it.
type nodeEdges struct {
	out map[EdgeSlot]*LiveEdge
	in  map[EdgeSlot]*LiveEdge
}

// OutEdges and InEdges are the node's live edges from its end (nil maps for
// none).
func (e *NodeEntry) OutEdges() map[EdgeSlot]*LiveEdge {
	if e.edges == nil {
		return nil
	}
	return e.edges.out
}

func (e *NodeEntry) InEdges() map[EdgeSlot]*LiveEdge {
	if e.edges == nil {
		return nil
	}
	return e.edges.in
}

// addOut and addIn file a live edge in the node's maps, each made on first
// use.
func (e *NodeEntry) addOut(slot EdgeSlot, le *LiveEdge) {
	if e.edges == nil {
		e.edges = &nodeEdges{}
	}
	if e.edges.out == nil {
		e.edges.out = map[EdgeSlot]*LiveEdge{}
	}
	e.edges.out[slot] = le
}

func (e *NodeEntry) addIn(slot EdgeSlot, le *LiveEdge) {
	if e.edges == nil {
		e.edges = &nodeEdges{}
	}
	if e.edges.in == nil {
		e.edges.in = map[EdgeSlot]*LiveEdge{}
	}
	e.edges.in[slot] = le
}

// dropEdgesIfNone lets the maps go once the node has no live edge left.
func (e *NodeEntry) dropEdgesIfNone() {
	if e.edges != nil && len(e.edges.out) == 0 && len(e.edges.in) == 0 {
		e.edges = nil
	}
}

// NodeEntry is one node in the table.
type NodeEntry struct {
	Ref   NodeRef
	State NodeState
	edges *nodeEdges // nil while the node has none

	// Under the table's mu: marked says the entry waits in Table.marked
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

// Table is every node of every tenant.
type Table struct {
	Mu    sync.RWMutex
	Nodes NodeIndex
	// marked lists the entries changed since the list indexes last caught
	// up with the table, each once, with where they are listed (lists.go).
	marked []markedEntry
	// lists are the list indexes, under their own locks (lists.go).
	lists *lists
	// Fences keeps the last fence of each deleted node id, so a node
	// re-created under it continues the numbers.
	Fences map[NodeRef]uint64
	// finished queues each tenant's finished nodes for retention
	// (finished.go); only the writer touches it.
	finished map[string]*FinishedQueue
}

func NewTable() *Table {
	return &Table{Nodes: newNodeIndex(0), lists: newLists(), Fences: map[NodeRef]uint64{}, finished: map[string]*FinishedQueue{}}
}

// mark queues e for the list indexes to catch up with (call with mu held,
// before changing e.st or taking e out of nodes; isNew for an entry just
// made). An entry already in the table and not marked is listed under the
// key its state gives: the last catch-up put it there, and nothing has
// changed it since.
func (t *Table) mark(e *NodeEntry, isNew bool) {
	if e.marked {
		return
	}
	e.marked = true
	m := markedEntry{e: e}
	if !isNew {
		m.from, m.listed = listKeyOf(&e.State), true
	}
	t.marked = append(t.marked, m)
}

// StateOf fills a NodeState from a record; it keeps the record of a running
// node, and of every live node with liveRecords (Derive's liveRecords: graphstore's Store.liveRecords).
func StateOf(n *records.Node, record []byte, liveRecords bool) NodeState {
	st := NodeState{
		Status: codeOf(n.Status),
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
	st.HasBlobs = len(n.Blobs) > 0
	st.HoldsSlots = HoldsSlots(n)
	switch {
	case n.Status.Terminal():
		st.Changed = n.UpdatedAt.UnixNano()
	case n.Status == records.StatusRunning || liveRecords:
		st.Record = &record
	}
	return st
}

// HoldsSlots reports whether n counts against its concurrency keys' limits:
// it has keys and runs, or waits at rest after a hand-off.
func HoldsSlots(n *records.Node) bool {
	if len(n.ConcurrencyKeys) == 0 {
		return false
	}
	return n.Status == records.StatusRunning || (n.SlotHeld && n.Status.AtRest())
}

// WithRecord returns st moved to the record n (counts kept).
func (st NodeState) WithRecord(n *records.Node, record []byte, liveRecords bool) NodeState {
	next := StateOf(n, record, liveRecords)
	next.Deps, next.Children, next.Dependents = st.Deps, st.Children, st.Dependents
	return next
}

// Intern returns the one copy of a string that many nodes share (a queue, a
// type, a holder), so a million nodes do not hold a million copies of it.
func Intern(s string) string {
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

// BTreeDegree is the degree of the in-memory indexes' B-trees (nodes of up
// to 63 items). Scenario (b) moves every job through about a dozen of them;
// against 16, degree 32 used 74-76 instead of 79-83 µs of server CPU per job
// (A/B, three 8 s runs each; 8 was no better than 16, 64 and 128 no better
// than 32), and (g)'s RSS did not move.
const BTreeDegree = 32
