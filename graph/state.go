package graph

// The in-memory state: what the store knows of every node without reading
// its record (its place in every index, its blocker counts, its live edges)
// and, while a node is live, the record itself. It is derived from the
// records, rebuilt at open (rebuild.go), changed by write transactions
// through their own copies (Tx.mut) and folded in on the writer when a
// transaction succeeds (Tx.apply), so a failed transaction leaves nothing.
//
// The writer reads it without a lock (it alone changes it); readers outside
// the writer (lists, readiness in a GET) take mu for reading.

import (
	"bytes"
	"strings"
	"sync"
	"time"
	"unique"

	"github.com/google/btree"
)

// nodeRef names a node across tenants.
type nodeRef struct{ tenant, id string }

// nodeState is what the store keeps in memory of one node.
type nodeState struct {
	order  [orderKeyLength]byte
	status Status
	queue  string
	parent string
	typ    string
	target string
	labels []string
	holder string // the live lease's identity ("" for none)
	runAt  int64  // unix ms, rounded up (runAtMS); 0 = none
	// changed is when a finished node last changed (unix ns), for
	// retention; 0 while the node is not finished.
	changed int64
	// hasBlobs says the record names blobs, so a change reads the stored
	// record to move their reference counts.
	hasBlobs bool
	// record is the encoded record while the node is live (open, queued or
	// running), so the hot paths never read the store; nil once terminal.
	record []byte

	deps       int64 // live depends_on edges whose target is not satisfied
	children   int64 // children not terminal
	dependents int64 // live depends_on edges pointing at the node
}

// ready reports whether the node waits in its queue with nothing blocking it.
func (st *nodeState) ready() bool {
	return st.status == StatusQueued && st.queue != "" && st.deps == 0 && st.children == 0
}

// edgeSlot names a live edge from one end: its type and the node at the other.
type edgeSlot struct{ typ, peer string }

// liveEdge is a live edge in memory: its record and the seq of its
// edge_added event.
type liveEdge struct {
	e   *Edge
	seq uint64
}

// nodeEntry is one node in the table.
type nodeEntry struct {
	ref nodeRef
	st  nodeState
	out map[edgeSlot]*liveEdge
	in  map[edgeSlot]*liveEdge
}

// compareEntry orders a tenant's nodes in list order: by order bytes, then id.
func compareEntry(a, b *nodeEntry) int {
	if c := bytes.Compare(a.st.order[:], b.st.order[:]); c != 0 {
		return c
	}
	return strings.Compare(a.ref.id, b.ref.id)
}

func lessEntry(a, b *nodeEntry) bool { return compareEntry(a, b) < 0 }

func lessEntryID(a, b *nodeEntry) bool { return a.ref.id < b.ref.id }

type queueStatus struct {
	queue  string
	status Status
}

// tenantIndex holds one tenant's list indexes, in list order (priority high
// first, then oldest, then id); leased and byHolder are in id order.
type tenantIndex struct {
	all      *btree.BTreeG[*nodeEntry]
	byStatus map[Status]*btree.BTreeG[*nodeEntry]
	byQueue  map[queueStatus]*btree.BTreeG[*nodeEntry]
	byParent map[string]*btree.BTreeG[*nodeEntry]
	leased   *btree.BTreeG[*nodeEntry]
	byHolder map[string]*btree.BTreeG[*nodeEntry]
}

func newListTree() *btree.BTreeG[*nodeEntry] { return btree.NewG(btreeDegree, lessEntry) }

// table is every node of every tenant.
type table struct {
	mu      sync.RWMutex
	nodes   map[nodeRef]*nodeEntry
	tenants map[string]*tenantIndex
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
	return &table{nodes: map[nodeRef]*nodeEntry{}, tenants: map[string]*tenantIndex{}, fences: map[nodeRef]uint64{}, finished: map[string]*finishedQueue{}, blobs: newBlobTable()}
}

func (t *table) tenant(name string) *tenantIndex {
	ti, ok := t.tenants[name]
	if !ok {
		ti = &tenantIndex{
			all:      newListTree(),
			byStatus: map[Status]*btree.BTreeG[*nodeEntry]{},
			byQueue:  map[queueStatus]*btree.BTreeG[*nodeEntry]{},
			byParent: map[string]*btree.BTreeG[*nodeEntry]{},
			leased:   btree.NewG(btreeDegree, lessEntryID),
			byHolder: map[string]*btree.BTreeG[*nodeEntry]{},
		}
		t.tenants[name] = ti
	}
	return ti
}

func treeOf[K comparable](m map[K]*btree.BTreeG[*nodeEntry], k K) *btree.BTreeG[*nodeEntry] {
	tr, ok := m[k]
	if !ok {
		tr = newListTree()
		m[k] = tr
	}
	return tr
}

// unindex takes e out of its tenant's indexes (call with mu held, before
// changing e.st).
func (t *table) unindex(e *nodeEntry) {
	ti := t.tenant(e.ref.tenant)
	ti.all.Delete(e)
	dropFrom(ti.byStatus, e.st.status, e)
	if e.st.queue != "" {
		dropFrom(ti.byQueue, queueStatus{e.st.queue, e.st.status}, e)
	}
	if e.st.parent != "" {
		dropFrom(ti.byParent, e.st.parent, e)
	}
	if e.st.holder != "" {
		ti.leased.Delete(e)
		dropFrom(ti.byHolder, e.st.holder, e)
	}
}

// index puts e into its tenant's indexes (call with mu held).
func (t *table) index(e *nodeEntry) {
	ti := t.tenant(e.ref.tenant)
	ti.all.ReplaceOrInsert(e)
	treeOf(ti.byStatus, e.st.status).ReplaceOrInsert(e)
	if e.st.queue != "" {
		treeOf(ti.byQueue, queueStatus{e.st.queue, e.st.status}).ReplaceOrInsert(e)
	}
	if e.st.parent != "" {
		treeOf(ti.byParent, e.st.parent).ReplaceOrInsert(e)
	}
	if e.st.holder != "" {
		ti.leased.ReplaceOrInsert(e)
		ti.heldBy(e.st.holder).ReplaceOrInsert(e)
	}
}

// heldBy is the tree of the nodes whose lease names holder, in id order (an
// id never changes, so a node never moves in it while held).
func (ti *tenantIndex) heldBy(holder string) *btree.BTreeG[*nodeEntry] {
	tr, ok := ti.byHolder[holder]
	if !ok {
		tr = btree.NewG(btreeDegree, lessEntryID)
		ti.byHolder[holder] = tr
	}
	return tr
}

// move gives e the state st, moving it only in the indexes whose place
// changed (call with mu held): a status change touches the status and queue
// indexes, not the list of every node.
func (t *table) move(e *nodeEntry, st *nodeState) {
	old := &e.st
	ti := t.tenant(e.ref.tenant)
	sameOrder := old.order == st.order
	moveAll := !sameOrder
	moveStatus := !sameOrder || old.status != st.status
	moveQueue := !sameOrder || old.status != st.status || old.queue != st.queue
	moveParent := !sameOrder || old.parent != st.parent
	moveLeased := old.holder != st.holder
	if moveAll {
		ti.all.Delete(e)
	}
	if moveStatus {
		dropFrom(ti.byStatus, old.status, e)
	}
	if moveQueue && old.queue != "" {
		dropFrom(ti.byQueue, queueStatus{old.queue, old.status}, e)
	}
	if moveParent && old.parent != "" {
		dropFrom(ti.byParent, old.parent, e)
	}
	if moveLeased && old.holder != "" {
		ti.leased.Delete(e)
		dropFrom(ti.byHolder, old.holder, e)
	}
	e.st = *st
	if moveAll {
		ti.all.ReplaceOrInsert(e)
	}
	if moveStatus {
		treeOf(ti.byStatus, st.status).ReplaceOrInsert(e)
	}
	if moveQueue && st.queue != "" {
		treeOf(ti.byQueue, queueStatus{st.queue, st.status}).ReplaceOrInsert(e)
	}
	if moveParent && st.parent != "" {
		treeOf(ti.byParent, st.parent).ReplaceOrInsert(e)
	}
	if moveLeased && st.holder != "" {
		ti.leased.ReplaceOrInsert(e)
		ti.heldBy(st.holder).ReplaceOrInsert(e)
	}
}

// dropFrom deletes e from the tree m[k], and the tree once it is empty.
func dropFrom[K comparable](m map[K]*btree.BTreeG[*nodeEntry], k K, e *nodeEntry) {
	if tr, ok := m[k]; ok {
		tr.Delete(e)
		if tr.Len() == 0 {
			delete(m, k)
		}
	}
}

// stateOf fills a nodeState from a record.
func stateOf(n *Node, record []byte) nodeState {
	st := nodeState{
		status: n.Status,
		queue:  intern(n.Queue),
		parent: n.Parent,
		typ:    intern(n.Type),
		target: intern(n.Target),
		labels: n.Labels,
	}
	copy(st.order[:], n.order())
	if n.Lease != nil {
		st.holder = intern(n.Lease.By)
	}
	if n.RunAt != nil {
		st.runAt = runAtMS(*n.RunAt)
	}
	st.hasBlobs = len(n.Blobs) > 0
	if !n.Status.Terminal() {
		st.record = record
	} else {
		st.changed = n.UpdatedAt.UnixNano()
	}
	return st
}

// withRecord returns st moved to the record n (counts kept).
func (st nodeState) withRecord(n *Node, record []byte) nodeState {
	next := stateOf(n, record)
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
