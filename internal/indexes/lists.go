package indexes

// The list indexes: each tenant's nodes in list order, by status, by queue
// and status and by parent, and its leased nodes by id and by holder. They
// serve lists (NodeList, LiveLeaseIDs, HeldNodeIDs) and nothing the writer
// decides, so the writer does not keep them up: Table.Fold only marks each
// entry it changed (Table.mark), and catching up (Table.SyncLists) moves a
// marked entry once, from the key it is listed under to the one its state
// gives now, however many commits changed it meanwhile (a job claimed and
// completed between two catch-ups moves from queued to done directly). The
// key an entry was listed under is kept with its mark, taken from its state
// when the writer first changes it after a catch-up; the entry itself keeps
// only the order its trees compare.
//
// Every list catches up before it walks, so it holds at least every commit
// before it began; it may hold a few after (lists re-read each record and
// check their filters on it). syncLoop catches up every listSyncEvery so the
// marks do not pile up between lists.
//
// Locks: the table's mu guards the entries' state and the marks; lists.mu
// guards the trees and each entry's listed key; lists.sync lets one catch-up
// run at a time. A catch-up holds the table's mu only to copy out the marked
// entries' keys, and moves them under lists.mu, so the writer never waits
// for a B-tree.

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/tether-run/tether/internal/records"
)

// listSyncEvery is how often the list indexes catch up when nothing lists.
const listSyncEvery = 50 * time.Millisecond

// listKey is where an entry sits in the list indexes.
type listKey struct {
	order  [records.OrderKeyLength]byte
	status StatusCode
	queue  atom
	parent atom
	holder atom
}

func listKeyOf(st *NodeState) listKey {
	return listKey{order: st.order, status: st.Status, queue: st.queue, parent: st.parent, holder: st.holder}
}

// compareEntry orders a tenant's listed nodes in list order: by order bytes,
// then id.
func compareEntry(a, b *NodeEntry) int {
	if c := records.CompareOrder(&a.listedOrder, &b.listedOrder); c != 0 {
		return c
	}
	return strings.Compare(a.Ref.ID, b.Ref.ID)
}

func lessEntry(a, b *NodeEntry) bool { return compareEntry(a, b) < 0 }

func lessEntryID(a, b *NodeEntry) bool { return a.Ref.ID < b.Ref.ID }

type queueStatus struct {
	queue  atom
	status StatusCode
}

// tenantIndex holds one tenant's list indexes, in list order (priority high
// first, then oldest, then id); leased and byHolder are in id order.
type tenantIndex struct {
	all      *btree.BTreeG[*NodeEntry]
	byStatus map[StatusCode]*btree.BTreeG[*NodeEntry]
	byQueue  map[queueStatus]*btree.BTreeG[*NodeEntry]
	byParent map[atom]*btree.BTreeG[*NodeEntry]
	leased   *btree.BTreeG[*NodeEntry]
	byHolder map[atom]*btree.BTreeG[*NodeEntry]
}

func newListTree() *btree.BTreeG[*NodeEntry] { return btree.NewG(BTreeDegree, lessEntry) }

// lists are the list indexes of every tenant.
type lists struct {
	sync    sync.Mutex   // one catch-up at a time; guards targets and spare
	mu      sync.RWMutex // the trees, and every entry's listedOrder
	tenants map[string]*tenantIndex
	targets []listTarget
	spare   []markedEntry
}

// markedEntry is an entry the writer changed since the last catch-up, and
// the key it is listed under (when listed).
type markedEntry struct {
	e      *NodeEntry
	from   listKey
	listed bool
}

// listTarget is a marked entry and where it belongs now.
type listTarget struct {
	markedEntry
	to   listKey
	gone bool
}

func newLists() *lists { return &lists{tenants: map[string]*tenantIndex{}} }

// SyncLists brings the list indexes up to the table: every marked entry
// moves to the key its state gives now, or out once it left the table.
func (t *Table) SyncLists() {
	l := t.lists
	l.sync.Lock()
	defer l.sync.Unlock()
	t.Mu.Lock()
	marked := t.marked
	t.marked = l.spare
	targets := l.targets[:0]
	for _, m := range marked {
		m.e.marked = false
		// Gone: removed from the table (a node made again under its id
		// has another entry).
		cur, _ := t.Nodes.Get(m.e.Ref)
		gone := cur != m.e
		targets = append(targets, listTarget{markedEntry: m, to: listKeyOf(&m.e.State), gone: gone})
	}
	t.Mu.Unlock()
	if len(targets) > 0 {
		l.mu.Lock()
		for i := range targets {
			l.place(&targets[i])
		}
		l.mu.Unlock()
	}
	clear(marked)
	clear(targets)
	l.spare, l.targets = marked[:0], targets[:0]
}

// SyncLoop catches the list indexes up every listSyncEvery until done closes.
func (t *Table) SyncLoop(done <-chan struct{}) { t.SyncLoopEvery(done, listSyncEvery) }

// SyncLoopEvery is SyncLoop at another interval: the simulation, whose
// hours of fake time would otherwise wake the loop 72,000 times an hour,
// catches up less often (nothing it checks reads the lists).
func (t *Table) SyncLoopEvery(done <-chan struct{}, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			t.SyncLists()
		}
	}
}

// place moves one entry to its target (call with mu held).
func (l *lists) place(tg *listTarget) {
	e := tg.e
	switch {
	case tg.gone:
		if tg.listed {
			l.tenant(e.Ref.Tenant).unlist(e, &tg.from)
		}
	case !tg.listed:
		e.listedOrder = tg.to.order
		l.tenant(e.Ref.Tenant).list(e, &tg.to)
	default:
		l.tenant(e.Ref.Tenant).move(e, &tg.from, &tg.to)
	}
}

// tenant is name's indexes, made on first use (call with mu held).
func (l *lists) tenant(name string) *tenantIndex {
	ti, ok := l.tenants[name]
	if !ok {
		ti = &tenantIndex{
			all:      newListTree(),
			byStatus: map[StatusCode]*btree.BTreeG[*NodeEntry]{},
			byQueue:  map[queueStatus]*btree.BTreeG[*NodeEntry]{},
			byParent: map[atom]*btree.BTreeG[*NodeEntry]{},
			leased:   btree.NewG(BTreeDegree, lessEntryID),
			byHolder: map[atom]*btree.BTreeG[*NodeEntry]{},
		}
		l.tenants[name] = ti
	}
	return ti
}

func treeOf[K comparable](m map[K]*btree.BTreeG[*NodeEntry], k K) *btree.BTreeG[*NodeEntry] {
	tr, ok := m[k]
	if !ok {
		tr = newListTree()
		m[k] = tr
	}
	return tr
}

// unlist takes e out of the indexes, where k lists it.
func (ti *tenantIndex) unlist(e *NodeEntry, k *listKey) {
	ti.all.Delete(e)
	dropFrom(ti.byStatus, k.status, e)
	if k.queue != (atom{}) {
		dropFrom(ti.byQueue, queueStatus{k.queue, k.status}, e)
	}
	if k.parent != (atom{}) {
		dropFrom(ti.byParent, k.parent, e)
	}
	if k.holder != (atom{}) {
		ti.leased.Delete(e)
		dropFrom(ti.byHolder, k.holder, e)
	}
}

// list puts e into the indexes under k (e.listedOrder is k.order).
func (ti *tenantIndex) list(e *NodeEntry, k *listKey) {
	ti.all.ReplaceOrInsert(e)
	treeOf(ti.byStatus, k.status).ReplaceOrInsert(e)
	if k.queue != (atom{}) {
		treeOf(ti.byQueue, queueStatus{k.queue, k.status}).ReplaceOrInsert(e)
	}
	if k.parent != (atom{}) {
		treeOf(ti.byParent, k.parent).ReplaceOrInsert(e)
	}
	if k.holder != (atom{}) {
		ti.leased.ReplaceOrInsert(e)
		ti.heldBy(k.holder).ReplaceOrInsert(e)
	}
}

// heldBy is the tree of the nodes whose lease names holder, in id order (an
// id never changes, so a node never moves in it while held).
func (ti *tenantIndex) heldBy(holder atom) *btree.BTreeG[*NodeEntry] {
	tr, ok := ti.byHolder[holder]
	if !ok {
		tr = btree.NewG(BTreeDegree, lessEntryID)
		ti.byHolder[holder] = tr
	}
	return tr
}

// move lists e, listed under old, under key instead, moving it only in the
// indexes whose place changed: a status change touches the status and queue
// indexes, not the list of every node.
func (ti *tenantIndex) move(e *NodeEntry, old, key *listKey) {
	sameOrder := old.order == key.order
	moveAll := !sameOrder
	moveStatus := !sameOrder || old.status != key.status
	moveQueue := !sameOrder || old.status != key.status || old.queue != key.queue
	moveParent := !sameOrder || old.parent != key.parent
	moveLeased := old.holder != key.holder
	if moveAll {
		ti.all.Delete(e)
	}
	if moveStatus {
		dropFrom(ti.byStatus, old.status, e)
	}
	if moveQueue && old.queue != (atom{}) {
		dropFrom(ti.byQueue, queueStatus{old.queue, old.status}, e)
	}
	if moveParent && old.parent != (atom{}) {
		dropFrom(ti.byParent, old.parent, e)
	}
	if moveLeased && old.holder != (atom{}) {
		ti.leased.Delete(e)
		dropFrom(ti.byHolder, old.holder, e)
	}
	e.listedOrder = key.order
	if moveAll {
		ti.all.ReplaceOrInsert(e)
	}
	if moveStatus {
		treeOf(ti.byStatus, key.status).ReplaceOrInsert(e)
	}
	if moveQueue && key.queue != (atom{}) {
		treeOf(ti.byQueue, queueStatus{key.queue, key.status}).ReplaceOrInsert(e)
	}
	if moveParent && key.parent != (atom{}) {
		treeOf(ti.byParent, key.parent).ReplaceOrInsert(e)
	}
	if moveLeased && key.holder != (atom{}) {
		ti.leased.ReplaceOrInsert(e)
		ti.heldBy(key.holder).ReplaceOrInsert(e)
	}
}

// dropFrom deletes e from the tree m[k], and the tree once it is empty.
func dropFrom[K comparable](m map[K]*btree.BTreeG[*NodeEntry], k K, e *NodeEntry) {
	if tr, ok := m[k]; ok {
		tr.Delete(e)
		if tr.Len() == 0 {
			delete(m, k)
		}
	}
}

// ListIndex names one of a tenant's list indexes: by parent when parent is
// set, else by queue and status when both are, else by status when it is
// set, else every node.
type ListIndex struct {
	Parent, Queue string
	Status        records.Status
}

// pick is the tree which names (nil for none).
func (ti *tenantIndex) pick(which *ListIndex) *btree.BTreeG[*NodeEntry] {
	switch {
	case which.Parent != "":
		return ti.byParent[atomOf(which.Parent)]
	case which.Queue != "" && which.Status != "":
		return ti.byQueue[queueStatus{atomOf(which.Queue), codeOf(which.Status)}]
	case which.Status != "":
		return ti.byStatus[codeOf(which.Status)]
	}
	return ti.all
}

// ListPivot is a place in a list index, for ascend: just before the node
// ref would sit at order (a pivot in no tree).
func ListPivot(ref NodeRef, order []byte) *NodeEntry {
	p := &NodeEntry{Ref: ref}
	copy(p.listedOrder[:], order)
	return p
}

// Ascend returns up to n ids of the index which of tenant strictly after
// pivot (from the start when nil), and the last entry returned.
func (t *Table) Ascend(tenant string, which *ListIndex, pivot *NodeEntry, n int) ([]string, *NodeEntry) {
	l := t.lists
	l.mu.RLock()
	defer l.mu.RUnlock()
	ti, ok := l.tenants[tenant]
	if !ok {
		return nil, nil
	}
	tr := ti.pick(which)
	if tr == nil {
		return nil, nil
	}
	var ids []string
	var last *NodeEntry
	visit := func(e *NodeEntry) bool {
		if pivot != nil && !lessEntry(pivot, e) {
			return true
		}
		ids = append(ids, e.Ref.ID)
		last = e
		return len(ids) < n
	}
	if pivot == nil {
		tr.Ascend(visit)
	} else {
		tr.AscendGreaterOrEqual(pivot, visit)
	}
	if last == nil {
		return ids, nil
	}
	// A copy: the entry itself may move once the lock is released.
	return ids, &NodeEntry{Ref: last.Ref, listedOrder: last.listedOrder}
}

// ListedTenants is every tenant the list indexes hold, by name, after
// catching up.
func (t *Table) ListedTenants() []string {
	t.SyncLists()
	l := t.lists
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]string, 0, len(l.tenants))
	for name := range l.tenants {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// LeasedAfter is up to n ids of tenant's leased nodes, in id order, after
// the id after ("" from the start), as the list indexes hold them (the
// caller catches them up first).
func (t *Table) LeasedAfter(tenant, after string, n int) []string {
	l := t.lists
	l.mu.RLock()
	defer l.mu.RUnlock()
	ti, ok := l.tenants[tenant]
	if !ok {
		return nil
	}
	var ids []string
	ti.leased.AscendGreaterOrEqual(&NodeEntry{Ref: NodeRef{tenant, after}}, func(e *NodeEntry) bool {
		if e.Ref.ID == after && after != "" {
			return true
		}
		ids = append(ids, e.Ref.ID)
		return len(ids) < n
	})
	return ids
}
