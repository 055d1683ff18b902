package graph

import (
	"container/heap"
	"sync"
)

// load fills an empty mirror from a store's nodes (derive: at open, and for
// tether check), best given in claim order, as rebuild sorts them: what track
// does node by node, but with the trees filled side by side. Each ready node
// goes into four trees or more (its queue's by claim order and by age, its
// claim index's, that index's tree of its type, and one per label), and at a
// million nodes those inserts are most of the mirror's build; here one
// goroutine fills each kind of tree, so they share both cores with the list
// indexes derive builds meanwhile. It returns the count moves for
// showCounts.
func (m *readyMirror) load(entries []*nodeEntry) []countMove {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now().UnixMilli()
	type claimable struct {
		q     *queueMirror
		items []*readyItem // in claim order
	}
	var (
		moves   []countMove
		queues  []*claimable
		ofQueue = map[*queueMirror]*claimable{}
	)
	for _, e := range entries {
		st := &e.st
		if st.queue == "" {
			continue
		}
		tq := tenantQueue{e.ref.tenant, st.queue}
		q := m.queue(tq)
		q.counts[st.status]++
		moves = append(moves, countMove{tq.tenant, tq.queue, "", st.status})
		if !st.ready() {
			continue
		}
		it := new(readyItem)
		*it = readyItemOf(e.ref.id, st)
		q.present[it.id] = it
		if it.runAt > now {
			heap.Push(&m.delayed, delayEntry{at: it.runAt, t: tq, id: it.id})
			continue
		}
		c := ofQueue[q]
		if c == nil {
			c = &claimable{q: q}
			ofQueue[q] = c
			queues = append(queues, c)
		}
		c.items = append(c.items, it)
		if it.target != "" && q.targeted[it.target] == nil {
			q.targeted[it.target] = newClaimIndex() // made here: the goroutines below only read the map
		}
	}
	each := func(fill func(q *queueMirror, it *readyItem)) func() {
		return func() {
			for _, c := range queues {
				for _, it := range c.items {
					fill(c.q, it)
				}
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(each(func(q *queueMirror, it *readyItem) { q.byClaim.ReplaceOrInsert(it) }))
	wg.Go(each(func(q *queueMirror, it *readyItem) { q.byAge.ReplaceOrInsert(it) }))
	wg.Go(each(func(q *queueMirror, it *readyItem) { q.indexOf(it).all.ReplaceOrInsert(it) }))
	wg.Go(each(func(q *queueMirror, it *readyItem) {
		ix := q.indexOf(it)
		insertInto(ix.byType, it.typ, it)
		for _, l := range it.labels {
			insertInto(ix.byLabel, l, it)
		}
	}))
	wg.Wait()
	m.armLocked()
	return moves
}

// indexOf is the claim index a claimable item belongs in: its target's, or
// the open one. The target's must exist.
func (q *queueMirror) indexOf(it *readyItem) *claimIndex {
	if it.target == "" {
		return q.open
	}
	return q.targeted[it.target]
}
