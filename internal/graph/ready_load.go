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
	// The claimable items, each with its queue and claim index, in the
	// order given (each tree's inserts then come in claim order).
	type claimable struct {
		q  *queueMirror
		ix *claimIndex
		it *readyItem
	}
	moves := make([]countMove, 0, len(entries))
	all := make([]claimable, 0, len(entries)) // sized once: grown by append, a million would leave their copies behind
	m.sizePresent(entries)
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
		all = append(all, claimable{q, q.indexFor(it.target), it})
	}
	each := func(fill func(c claimable)) func() {
		return func() {
			for _, c := range all {
				fill(c)
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(each(func(c claimable) { c.q.byClaim.ReplaceOrInsert(c.it) }))
	wg.Go(each(func(c claimable) { c.q.byAge.ReplaceOrInsert(c.it) }))
	wg.Go(each(func(c claimable) { c.ix.all.ReplaceOrInsert(c.it) }))
	wg.Go(each(func(c claimable) { c.ix.insertFiltered(c.it) }))
	wg.Wait()
	m.armLocked()
	return moves
}

// sizePresent makes each queue's present map, while still empty, at the
// size load will fill it to: grown by doubling, a million entries' rehashing
// cost ~0.9 s of the start-up.
func (m *readyMirror) sizePresent(entries []*nodeEntry) {
	ready := map[tenantQueue]int{}
	for _, e := range entries {
		if e.st.ready() {
			ready[tenantQueue{e.ref.tenant, e.st.queue}]++
		}
	}
	for tq, n := range ready {
		if q := m.queue(tq); len(q.present) == 0 {
			q.present = make(map[string]*readyItem, n)
		}
	}
}
