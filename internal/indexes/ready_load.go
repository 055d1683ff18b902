package indexes

import (
	"sync"
	"time"
)

// load fills an empty mirror from a store's nodes (derive: at open, and for
// tether check), best given in claim order, as rebuild sorts them: what track
// does node by node, but with the trees filled side by side. Each ready node
// goes into two trees or more (its claim index's, that index's tree of its
// type, and one per label), and at a million nodes those inserts are most of
// the mirror's build; here one goroutine fills each kind of tree, so they
// share both cores with the list indexes derive builds meanwhile. The entries must be filed in no mirror yet. It returns the
// count moves for showCounts.
func (m *ReadyMirror) load(entries []*NodeEntry) []countMove {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now().UnixMilli()
	// The claimable entries, each with its queue and claim index, in the
	// order given (each tree's inserts then come in claim order).
	type claimable struct {
		q  *queueMirror
		ix *claimIndex
		e  *NodeEntry
	}
	moves := make([]countMove, 0, len(entries))
	all := make([]claimable, 0, len(entries)) // sized once: grown by append, a million would leave their copies behind
	for _, e := range entries {
		st := &e.State
		if st.queue == (atom{}) {
			continue
		}
		tq := TenantQueue{e.Ref.Tenant, st.queue.String()}
		q := m.queue(tq)
		q.counts[st.Status.Status()]++
		moves = append(moves, countMove{tq.Tenant, tq.Queue, "", st.Status.Status()})
		if !st.ready() {
			continue
		}
		q.entries++
		if st.runAt > now {
			e.mirror = mirrorDelayed
			m.delayed.Set(e, time.UnixMilli(st.runAt))
			continue
		}
		e.mirror = mirrorClaimable
		q.claimable++
		all = append(all, claimable{q, q.indexFor(st.target.String()), e})
	}
	each := func(fill func(c claimable)) func() {
		return func() {
			for _, c := range all {
				fill(c)
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(each(func(c claimable) { c.ix.all.ReplaceOrInsert(c.e) }))
	wg.Go(each(func(c claimable) { c.ix.insertFiltered(c.e) }))
	wg.Wait()
	m.armLocked()
	return moves
}
