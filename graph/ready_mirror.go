package graph

import (
	"bytes"
	"container/heap"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/tether-run/tether/internal/clock"
)

// readyItem is one entry of the ready index.
type readyItem struct {
	order   [orderKeyLength]byte
	id      string
	runAt   int64 // unix ms; 0 = none
	created int64 // unix ns
}

func lessClaimOrder(a, b readyItem) bool {
	if c := bytes.Compare(a.order[:], b.order[:]); c != 0 {
		return c < 0
	}
	return a.id < b.id
}

func lessAge(a, b readyItem) bool {
	if a.created != b.created {
		return a.created < b.created
	}
	return a.id < b.id
}

type tenantQueue struct{ tenant, queue string }

// queueMirror holds one queue's ready entries.
type queueMirror struct {
	present map[string]readyItem     // every entry, claimable or delayed
	byClaim *btree.BTreeG[readyItem] // claimable now, in claim order
	byAge   *btree.BTreeG[readyItem] // claimable now, oldest first
	waiters chan struct{}            // closed when something becomes claimable
	counts  map[Status]int64         // nodes of the queue by status
}

// readyMirror is the in-memory copy of the ready index, written through by
// the commit hooks of syncReady and rebuilt from the index at start. Entries
// whose run_at is ahead wait in a heap and are promoted by a timer. Claim-next
// walks byClaim: O(log n) to the first claimable node.
type readyMirror struct {
	mu      sync.Mutex
	clock   clock.Clock
	queues  map[tenantQueue]*queueMirror
	delayed delayHeap
	timer   clock.Timer
	timerAt int64
	closed  bool
}

func newReadyMirror(clk clock.Clock) *readyMirror {
	return &readyMirror{clock: clk, queues: map[tenantQueue]*queueMirror{}}
}

func (m *readyMirror) queue(t tenantQueue) *queueMirror {
	q, ok := m.queues[t]
	if !ok {
		q = &queueMirror{
			present: map[string]readyItem{},
			byClaim: btree.NewG(16, lessClaimOrder),
			byAge:   btree.NewG(16, lessAge),
			counts:  map[Status]int64{},
		}
		m.queues[t] = q
	}
	return q
}

func (m *readyMirror) add(tenant, queue string, it readyItem) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := tenantQueue{tenant, queue}
	q := m.queue(t)
	if old, ok := q.present[it.id]; ok {
		q.byClaim.Delete(old)
		q.byAge.Delete(old)
	}
	q.present[it.id] = it
	now := m.clock.Now().UnixMilli()
	if it.runAt <= now {
		q.byClaim.ReplaceOrInsert(it)
		q.byAge.ReplaceOrInsert(it)
		m.notifyLocked(t)
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
		q.byClaim.Delete(old)
		q.byAge.Delete(old)
		delete(q.present, id)
	}
	// A delayed entry stays in the heap and is dropped when it comes due.
}

// ascend calls fn with the claimable ids of a queue in claim order. It copies
// a chunk at a time under the lock and calls fn without it, so fn may use
// the mirror (QueueCount) and the writer's hooks never wait on a caller.
func (m *readyMirror) ascend(tenant, queue string, now time.Time, fn func(id string) bool) {
	const chunk = 64
	var buf []readyItem
	var after *readyItem
	for {
		buf = buf[:0]
		m.mu.Lock()
		m.promoteLocked(now.UnixMilli())
		q, ok := m.queues[tenantQueue{tenant, queue}]
		if ok {
			collect := func(it readyItem) bool {
				if after != nil && !lessClaimOrder(*after, it) {
					return true // the pivot itself
				}
				buf = append(buf, it)
				return len(buf) < chunk
			}
			if after == nil {
				q.byClaim.Ascend(collect)
			} else {
				q.byClaim.AscendGreaterOrEqual(*after, collect)
			}
		}
		m.mu.Unlock()
		for _, it := range buf {
			if !fn(it.id) {
				return
			}
		}
		if len(buf) < chunk {
			return
		}
		last := buf[len(buf)-1]
		after = &last
	}
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
	return q.byClaim.Len(), time.Unix(0, oldest.created).UTC()
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
		if t.tenant != tenant || len(q.counts) == 0 {
			continue
		}
		st := QueueStat{Queue: t.queue, Counts: map[Status]int64{}, Ready: q.byClaim.Len()}
		for k, v := range q.counts {
			st.Counts[k] = v
		}
		if oldest, ok := q.byAge.Min(); ok {
			st.OldestReady = time.Unix(0, oldest.created).UTC()
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b QueueStat) int { return strings.Compare(a.Queue, b.Queue) })
	return out
}

func (m *readyMirror) changed(tenant, queue string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(tenantQueue{tenant, queue})
	if q.waiters == nil {
		q.waiters = make(chan struct{})
	}
	return q.waiters
}

func (m *readyMirror) notify(tenant, queue string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.notifyLocked(tenantQueue{tenant, queue})
}

func (m *readyMirror) notifyLocked(t tenantQueue) {
	if q, ok := m.queues[t]; ok && q.waiters != nil {
		close(q.waiters)
		q.waiters = nil
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
		q.byClaim.ReplaceOrInsert(it)
		q.byAge.ReplaceOrInsert(it)
		m.notifyLocked(e.t)
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

// ReadyIDs calls fn with the ids in tenant's queue that may be claimed at
// now, in claim order (priority high first, then oldest, then id), until fn
// returns false. It reads the in-memory mirror of the ready index; call it on
// the writer (inside Update) so the mirror matches what the transaction sees.
func (tx *Tx) ReadyIDs(tenant, queue string, fn func(id string) bool) {
	tx.store.ready.ascend(tenant, queue, tx.now, fn)
}

// ReadyStats returns how many nodes of the queue are claimable now and when
// the oldest of them was created.
func (s *Store) ReadyStats(tenant, queue string) (int, time.Time) {
	return s.ready.stats(tenant, queue)
}

// ReadyChanged returns a channel closed the next time a node of the queue
// becomes claimable (or when Kick is called for it).
func (s *Store) ReadyChanged(tenant, queue string) <-chan struct{} {
	return s.ready.changed(tenant, queue)
}

// Kick wakes the claimers waiting on a queue (it was resumed, or a running
// slot freed up).
func (s *Store) Kick(tenant, queue string) { s.ready.notify(tenant, queue) }
