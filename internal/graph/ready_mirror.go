package graph

import (
	"container/heap"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/tether-run/tether/internal/clock"
)

// readyItem is one entry of the ready index, with what claim-next filters
// on, so that a candidate that does not match is passed over without reading
// its node. Items are never changed once added (a change replaces the item),
// so the trees share pointers to them and a walk may keep one as its place.
type readyItem struct {
	order  [orderKeyLength]byte
	id     string
	runAt  int64 // unix ms; 0 = none
	typ    string
	target string // "" = any claimer
	labels []string
}

// created is the node's creation instant (unix ns), read from its order
// bytes: an item is 96 bytes without its own copy, 112 with it.
func (it *readyItem) created() int64 { return createdOf(it.order) }

type readyTree = btree.BTreeG[*readyItem]

func lessClaimOrder(a, b *readyItem) bool { return compareClaimOrder(a, b) < 0 }

func lessAge(a, b *readyItem) bool {
	if ac, bc := a.created(), b.created(); ac != bc {
		return ac < bc
	}
	return a.id < b.id
}

type tenantQueue struct{ tenant, queue string }

// queueMirror holds one queue's ready entries. Claimable items sit in byClaim
// and byAge and, for filtered claims, in the claim index of their target:
// open for untargeted items, targeted[sub] for those reserved to sub, so a
// claimer never walks past nodes reserved to someone else.
type queueMirror struct {
	present  map[string]*readyItem // every entry, claimable or delayed
	byClaim  *readyTree            // claimable now, in claim order
	byAge    *readyTree            // claimable now, oldest first
	open     *claimIndex           // claimable now by anyone
	targeted map[string]*claimIndex
	waiters  waitIndex
	counts   map[Status]int64 // nodes of the queue by status, as the writer sees them
	shown    map[Status]int64 // the same, as durable: what readers are shown
}

// readyMirror is the in-memory ready index: every queued node of a queue
// with no blocker, kept in step on the writer by track and derived from the
// records at open. Entries whose run_at is ahead wait in a heap and are
// promoted by a timer. Claim-next walks the claim indexes: O(log n) to the
// first node a filter matches, whatever the filter (see ReadyFilter).
type readyMirror struct {
	mu      sync.Mutex
	clock   clock.Clock
	queues  map[tenantQueue]*queueMirror
	delayed delayHeap
	timer   clock.Timer
	timerAt int64
	closed  bool
	scratch []*readyItem // the merge buffer of walk, used under mu only
}

func newReadyMirror(clk clock.Clock) *readyMirror {
	return &readyMirror{clock: clk, queues: map[tenantQueue]*queueMirror{}}
}

func (m *readyMirror) queue(t tenantQueue) *queueMirror {
	q, ok := m.queues[t]
	if !ok {
		q = &queueMirror{
			present:  map[string]*readyItem{},
			byClaim:  btree.NewG(btreeDegree, lessClaimOrder),
			byAge:    btree.NewG(btreeDegree, lessAge),
			open:     newClaimIndex(),
			targeted: map[string]*claimIndex{},
			counts:   map[Status]int64{},
			shown:    map[Status]int64{},
		}
		m.queues[t] = q
	}
	return q
}

// insertClaimable puts it in every tree that serves claims.
func (q *queueMirror) insertClaimable(it *readyItem) {
	q.byClaim.ReplaceOrInsert(it)
	q.byAge.ReplaceOrInsert(it)
	q.indexFor(it.target).insert(it)
}

// indexFor is the claim index of items reserved to target ("": the open
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

// deleteClaimable takes it out of the trees that serve claims; it need not be
// in them (a delayed entry is not).
func (q *queueMirror) deleteClaimable(it *readyItem) {
	if _, ok := q.byClaim.Delete(it); !ok {
		return
	}
	q.byAge.Delete(it)
	if it.target == "" {
		q.open.delete(it)
		return
	}
	if ix := q.targeted[it.target]; ix != nil {
		ix.delete(it)
		if ix.all.Len() == 0 {
			delete(q.targeted, it.target)
		}
	}
}

// add puts a ready node's item in its queue's trees. The label trees find
// an item again by its labels when it leaves: the item shares its node
// state's labels, which are never changed in place (labelsOf).
func (m *readyMirror) add(tenant, queue string, item readyItem) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it := &item
	t := tenantQueue{tenant, queue}
	q := m.queue(t)
	if old, ok := q.present[it.id]; ok {
		q.deleteClaimable(old)
	}
	q.present[it.id] = it
	now := m.clock.Now().UnixMilli()
	if it.runAt <= now {
		q.insertClaimable(it)
		q.waiters.wake(it)
		return
	}
	heap.Push(&m.delayed, delayEntry{at: it.runAt, t: t, id: it.id})
	m.armLocked()
}

func (m *readyMirror) remove(tenant, queue, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.queues[tenantQueue{tenant, queue}]
	if !ok {
		return
	}
	if old, ok := q.present[id]; ok {
		q.deleteClaimable(old)
		delete(q.present, id)
	}
	// A delayed entry stays in the heap and is dropped when it comes due.
	m.dropIfIdle(tenantQueue{tenant, queue}, q)
}

// dropIfIdle forgets a queue that holds nothing: no entry, no waiter, no
// node counted. Queue names are the clients' to choose; without this every
// name ever polled would stay in memory (call with mu held).
func (m *readyMirror) dropIfIdle(t tenantQueue, q *queueMirror) {
	if len(q.present) == 0 && q.waiters.waiting == 0 && len(q.counts) == 0 && len(q.shown) == 0 {
		if m.queues[t] == q {
			delete(m.queues, t)
		}
	}
}

// ascend calls fn with every claimable id of a queue in claim order, whatever
// its target; see walk.
func (m *readyMirror) ascend(tenant, queue string, now time.Time, fn func(id string) bool) {
	every := func(q *queueMirror, dst []*readyTree) []*readyTree { return append(dst, q.byClaim) }
	m.walk(tenant, queue, now, every, func(*readyItem) bool { return true }, fn)
}

// ascendFiltered calls fn with the claimable ids of a queue that f lets its
// claimer take, in claim order; see walk.
func (m *readyMirror) ascendFiltered(tenant, queue string, now time.Time, f ReadyFilter, fn func(id string) bool) {
	f = f.normal()
	m.walk(tenant, queue, now, f.sources, f.matches, fn)
}

func (m *readyMirror) stats(tenant, queue string) (int, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.promoteLocked(m.clock.Now().UnixMilli())
	q, ok := m.queues[tenantQueue{tenant, queue}]
	if !ok || q.byAge.Len() == 0 {
		return 0, time.Time{}
	}
	oldest, _ := q.byAge.Min()
	return q.byClaim.Len(), time.Unix(0, oldest.created()).UTC()
}

// count moves one node of a queue between statuses ("" for none).
func (m *readyMirror) count(tenant, queue string, from, to Status) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(tenantQueue{tenant, queue})
	if from != "" {
		q.counts[from]--
		if q.counts[from] <= 0 {
			delete(q.counts, from)
		}
	}
	if to != "" {
		q.counts[to]++
	}
	m.dropIfIdle(tenantQueue{tenant, queue}, q)
}

// QueueStat is what the store knows of one queue.
type QueueStat struct {
	Queue       string
	Counts      map[Status]int64
	Ready       int
	OldestReady time.Time
}

// QueueStats lists the queues of tenant that hold nodes, by name.
func (s *Store) QueueStats(tenant string) []QueueStat {
	m := s.ready
	m.mu.Lock()
	defer m.mu.Unlock()
	m.promoteLocked(m.clock.Now().UnixMilli())
	var out []QueueStat
	for t, q := range m.queues {
		if t.tenant != tenant || len(q.shown) == 0 {
			continue
		}
		st := QueueStat{Queue: t.queue, Counts: map[Status]int64{}, Ready: q.byClaim.Len()}
		for k, v := range q.shown {
			st.Counts[k] = v
		}
		if oldest, ok := q.byAge.Min(); ok {
			st.OldestReady = time.Unix(0, oldest.created()).UTC()
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b QueueStat) int { return strings.Compare(a.Queue, b.Queue) })
	return out
}

// notify wakes every claimer waiting on the queue.
func (m *readyMirror) notify(tenant, queue string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q, ok := m.queues[tenantQueue{tenant, queue}]; ok {
		q.waiters.wakeAll()
	}
}

// promoteLocked moves every delayed entry whose run_at has come into the
// claimable trees.
func (m *readyMirror) promoteLocked(now int64) {
	for len(m.delayed) > 0 && m.delayed[0].at <= now {
		e := heap.Pop(&m.delayed).(delayEntry)
		q, ok := m.queues[e.t]
		if !ok {
			continue
		}
		it, ok := q.present[e.id]
		if !ok || it.runAt != e.at {
			continue // removed or re-added since
		}
		q.insertClaimable(it)
		q.waiters.wake(it)
	}
}

// armLocked sets the promotion timer for the earliest delayed entry.
func (m *readyMirror) armLocked() {
	if m.closed || len(m.delayed) == 0 {
		return
	}
	at := m.delayed[0].at
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

func (m *readyMirror) fire() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.timer = nil
	m.promoteLocked(m.clock.Now().UnixMilli())
	m.armLocked()
}

func (m *readyMirror) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.timer != nil {
		m.timer.Stop()
	}
}

type delayEntry struct {
	at int64
	t  tenantQueue
	id string
}

type delayHeap []delayEntry

func (h delayHeap) Len() int           { return len(h) }
func (h delayHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h delayHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *delayHeap) Push(x any)        { *h = append(*h, x.(delayEntry)) }
func (h *delayHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// QueueCount returns how many nodes of the queue are in status st, as of the
// last commit. Inside Update it is the count every earlier transaction left.
func (tx *Tx) QueueCount(tenant, queue string, st Status) int64 {
	return tx.store.QueueCount(tenant, queue, st)
}

// QueueCount returns how many nodes of the queue are in status st, as of the
// last commit.
func (s *Store) QueueCount(tenant, queue string, st Status) int64 {
	m := s.ready
	m.mu.Lock()
	defer m.mu.Unlock()
	if q, ok := m.queues[tenantQueue{tenant, queue}]; ok {
		return q.counts[st]
	}
	return 0
}

// ReadyIDs calls fn with the ids in tenant's queue that f's claimer may take
// at now, in claim order (priority high first, then oldest, then id), until
// fn returns false. It reads the in-memory mirror of the ready index, whose
// items carry type, labels and target, so the ids are those that match f as
// of the node's last write; it never calls fn under the mirror's lock. Call
// it on the writer (inside Update) so the mirror matches what the
// transaction sees.
func (tx *Tx) ReadyIDs(tenant, queue string, f ReadyFilter, fn func(id string) bool) {
	tx.store.ready.ascendFiltered(tenant, queue, tx.now, f, fn)
}

// ReadyStats returns how many nodes of the queue are claimable now and when
// the oldest of them was created.
func (s *Store) ReadyStats(tenant, queue string) (int, time.Time) {
	return s.ready.stats(tenant, queue)
}

// ReadyWatch files a long-polling claimer of the queue: changed is closed
// the next time a node that f lets it take becomes claimable, or when Kick is
// called for the queue. Call it before looking, so that a node turning ready
// between the look and the wait is not missed, and call stop once done
// waiting (it may be called more than once).
func (s *Store) ReadyWatch(tenant, queue string, f ReadyFilter) (changed <-chan struct{}, stop func()) {
	return s.ready.watch(tenant, queue, f.normal())
}

// ReadyWaiters returns how many claimers are waiting on the queue and how
// many waits it has ended so far (by a matching node or by Kick), so tests
// and metrics can see who was woken without waiting for a timeout.
func (s *Store) ReadyWaiters(tenant, queue string) (waiting int, woken int64) {
	return s.ready.waitStats(tenant, queue)
}

// Kick wakes the claimers waiting on a queue (it was resumed, or a running
// slot freed up).
func (s *Store) Kick(tenant, queue string) { s.ready.notify(tenant, queue) }
