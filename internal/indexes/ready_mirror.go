package indexes

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/deadline"
	"github.com/tether-run/tether/internal/records"
)

// The ready index's trees hold the table's entries themselves (*NodeEntry),
// not copies: a queued node costs the index a few tree slots and no
// allocation. What the trees compare and the filters read (the entry's
// order, run_at, type, target and labels, in e.st) changes only on the
// writer in Table.Fold, under the mirror's mu, and only after the entry has
// left the trees (leaveLocked): readers walk them under mu, so they never
// see an entry mid-change. The entry's mirror field says where it is filed.
type readyTree = btree.BTreeG[*NodeEntry]

// Where an entry is filed in the ready mirror (NodeEntry.mirror, under the
// mirror's mu).
const (
	mirrorNone      uint8 = iota // not in the mirror
	mirrorDelayed                // in the delay heap, its run_at ahead
	mirrorClaimable              // in the claim trees
)

func lessClaimOrder(a, b *NodeEntry) bool { return compareClaimOrder(a, b) < 0 }

type TenantQueue struct{ Tenant, Queue string }

// queueMirror holds one queue's ready entries. Claimable entries sit in the
// claim index of their target and in no other tree: open for untargeted
// entries, targeted[sub] for those reserved to sub, so a claimer never walks past
// nodes reserved to someone else. The claim indexes together are the queue
// in claim order: one tree per order, no copy of every entry in another.
type queueMirror struct {
	entries   int         // entries filed, claimable or delayed
	claimable int         // entries in the claim trees
	open      *claimIndex // claimable now by anyone
	targeted  map[string]*claimIndex
	waiters   waitIndex
	counts    map[records.Status]int64 // nodes of the queue by status, as the writer sees them
	shown     map[records.Status]int64 // the same, as durable: what readers are shown
}

// ReadyMirror is the in-memory ready index: every queued node of a queue
// with no blocker, kept in step on the writer by track and derived from the
// records at open. Entries whose run_at is ahead wait in a heap and are
// promoted by a timer. Claim-next walks the claim indexes: O(log n) to the
// first node a filter matches, whatever the filter (see ReadyFilter).
type ReadyMirror struct {
	mu      sync.Mutex
	clock   clock.Clock
	queues  map[TenantQueue]*queueMirror
	delayed deadline.Heap[*NodeEntry] // entries whose run_at is ahead
	timer   clock.Timer
	timerAt int64
	closed  bool
	scratch []*NodeEntry // the merge buffer of walk, used under mu only
}

func NewReadyMirror(clk clock.Clock) *ReadyMirror {
	return &ReadyMirror{clock: clk, queues: map[TenantQueue]*queueMirror{}}
}

func (m *ReadyMirror) queue(t TenantQueue) *queueMirror {
	q, ok := m.queues[t]
	if !ok {
		q = &queueMirror{
			open:     newClaimIndex(),
			targeted: map[string]*claimIndex{},
			counts:   map[records.Status]int64{},
			shown:    map[records.Status]int64{},
		}
		m.queues[t] = q
	}
	return q
}

// insertClaimable puts e in every tree that serves claims.
func (q *queueMirror) insertClaimable(e *NodeEntry) {
	e.mirror = mirrorClaimable
	q.claimable++
	q.indexFor(e.State.target.String()).insert(e)
}

// indexFor is the claim index of entries reserved to target ("": the open
// one), made on first use.
func (q *queueMirror) indexFor(target string) *claimIndex {
	if target == "" {
		return q.open
	}
	ix := q.targeted[target]
	if ix == nil {
		ix = newClaimIndex()
		q.targeted[target] = ix
	}
	return ix
}

// deleteClaimable takes e out of the trees that serve claims (it is in them).
func (q *queueMirror) deleteClaimable(e *NodeEntry) {
	q.claimable--
	target := e.State.target.String()
	if target == "" {
		q.open.delete(e)
		return
	}
	if ix := q.targeted[target]; ix != nil {
		ix.delete(e)
		if ix.all.Len() == 0 {
			delete(q.targeted, target)
		}
	}
}

// addLocked files a ready node's entry in its queue: claimable when its
// run_at has come, else in the delay heap (call with mu held; e is in no
// tree of the mirror).
func (m *ReadyMirror) addLocked(e *NodeEntry) {
	t := TenantQueue{e.Ref.Tenant, e.State.queue.String()}
	q := m.queue(t)
	q.entries++
	if e.State.runAt <= m.clock.Now().UnixMilli() {
		q.insertClaimable(e)
		q.waiters.wake(e)
		return
	}
	e.mirror = mirrorDelayed
	m.delayed.Set(e, time.UnixMilli(e.State.runAt))
	m.armLocked()
}

// removeLocked takes e out of its queue's trees, as its state still files
// it (call with mu held, before e.st changes).
func (m *ReadyMirror) removeLocked(e *NodeEntry) {
	if e.mirror == mirrorNone {
		return
	}
	t := TenantQueue{e.Ref.Tenant, e.State.queue.String()}
	q, ok := m.queues[t]
	if !ok {
		e.mirror = mirrorNone
		return
	}
	if e.mirror == mirrorClaimable {
		q.deleteClaimable(e)
	} else {
		m.delayed.Remove(e)
	}
	e.mirror = mirrorNone
	q.entries--
	m.dropIfIdle(t, q)
}

// add and remove are addLocked and removeLocked under the lock.
func (m *ReadyMirror) add(e *NodeEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addLocked(e)
}

func (m *ReadyMirror) remove(e *NodeEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(e)
}

// dropIfIdle forgets a queue that holds nothing: no entry, no waiter, no
// node counted. Queue names are the clients' to choose; without this every
// name ever polled would stay in memory (call with mu held).
func (m *ReadyMirror) dropIfIdle(t TenantQueue, q *queueMirror) {
	if q.entries == 0 && q.waiters.waiting == 0 && len(q.counts) == 0 && len(q.shown) == 0 {
		if m.queues[t] == q {
			delete(m.queues, t)
		}
	}
}

// Ascend calls fn with every claimable id of a queue in claim order, whatever
// its target; see walk.
func (m *ReadyMirror) Ascend(tenant, queue string, now time.Time, fn func(id string) bool) {
	every := func(q *queueMirror, dst []*readyTree) []*readyTree {
		dst = append(dst, q.open.all)
		for _, ix := range q.targeted {
			dst = append(dst, ix.all)
		}
		return dst
	}
	m.walk(tenant, queue, now, every, func(*NodeEntry) bool { return true }, fn)
}

// AscendFiltered calls fn with the claimable ids of a queue that f lets its
// claimer take, in claim order; see walk.
func (m *ReadyMirror) AscendFiltered(tenant, queue string, now time.Time, f ReadyFilter, fn func(id string) bool) {
	f = f.normal()
	m.walk(tenant, queue, now, f.sources, f.matches, fn)
}

func (m *ReadyMirror) Stats(tenant, queue string) (int, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.promoteLocked(m.clock.Now().UnixMilli())
	q, ok := m.queues[TenantQueue{tenant, queue}]
	if !ok {
		return 0, time.Time{}
	}
	oldest, found := q.oldestCreated()
	if !found {
		return 0, time.Time{}
	}
	return q.claimable, time.Unix(0, oldest).UTC()
}

// count moves one node of a queue between statuses ("" for none; call with
// mu held).
func (m *ReadyMirror) count(tenant, queue string, from, to records.Status) {
	q := m.queue(TenantQueue{tenant, queue})
	if from != "" {
		q.counts[from]--
		if q.counts[from] <= 0 {
			delete(q.counts, from)
		}
	}
	if to != "" {
		q.counts[to]++
	}
	m.dropIfIdle(TenantQueue{tenant, queue}, q)
}

// QueueStat is what the store knows of one queue.
type QueueStat struct {
	Queue       string
	Counts      map[records.Status]int64
	Ready       int
	OldestReady time.Time
}

// QueueStats lists the queues of tenant that hold nodes, by name.
func (m *ReadyMirror) QueueStats(tenant string) []QueueStat {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.promoteLocked(m.clock.Now().UnixMilli())
	var out []QueueStat
	for t, q := range m.queues {
		if t.Tenant != tenant || len(q.shown) == 0 {
			continue
		}
		st := QueueStat{Queue: t.Queue, Counts: map[records.Status]int64{}, Ready: q.claimable}
		for k, v := range q.shown {
			st.Counts[k] = v
		}
		if oldest, ok := q.oldestCreated(); ok {
			st.OldestReady = time.Unix(0, oldest).UTC()
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b QueueStat) int { return strings.Compare(a.Queue, b.Queue) })
	return out
}

// Notify wakes every claimer waiting on the queue.
func (m *ReadyMirror) Notify(tenant, queue string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q, ok := m.queues[TenantQueue{tenant, queue}]; ok {
		q.waiters.wakeAll()
	}
}

// promoteLocked moves every delayed entry whose run_at has come into the
// claimable trees.
func (m *ReadyMirror) promoteLocked(now int64) {
	for {
		e, at, ok := m.delayed.Peek()
		if !ok || at.UnixMilli() > now {
			return
		}
		m.delayed.Pop()
		q, ok := m.queues[TenantQueue{e.Ref.Tenant, e.State.queue.String()}]
		if !ok {
			e.mirror = mirrorNone
			continue
		}
		q.insertClaimable(e)
		q.waiters.wake(e)
	}
}

// armLocked sets the promotion timer for the earliest delayed entry.
func (m *ReadyMirror) armLocked() {
	_, next, ok := m.delayed.Peek()
	if m.closed || !ok {
		return
	}
	at := next.UnixMilli()
	if m.timer != nil && m.timerAt <= at {
		return
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerAt = at
	wait := time.Duration(at-m.clock.Now().UnixMilli()) * time.Millisecond
	m.timer = m.clock.AfterFunc(wait, m.fire)
}

func (m *ReadyMirror) fire() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.timer = nil
	m.promoteLocked(m.clock.Now().UnixMilli())
	m.armLocked()
}

func (m *ReadyMirror) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.timer != nil {
		m.timer.Stop()
	}
}

// QueueCount is how many nodes of the queue are in status st, as of the
// last commit.
func (m *ReadyMirror) QueueCount(tenant, queue string, st records.Status) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q, ok := m.queues[TenantQueue{tenant, queue}]; ok {
		return q.counts[st]
	}
	return 0
}

// QueuesHeld is how many queues the mirror holds (tests see idle ones
// forgotten).
func (m *ReadyMirror) QueuesHeld() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queues)
}
