package graph

import "slices"

// countMove is one node moving between statuses of a queue ("" for none).
type countMove struct {
	tenant, queue string
	from, to      Status
}

// track moves a node's entry in the ready mirror and its queue's status
// counts from where old had it to where st has it (nil: no node). It runs on
// the writer inside Tx.apply, so claim-next (also on the writer) always sees
// what the transactions before it left. The counts readers are shown move
// only once the change is durable: track appends the moves to shown, for
// the caller to apply then (showCounts).
func (m *readyMirror) track(ref nodeRef, old, st *nodeState, shown *[]countMove) {
	wasReady, isReady := old != nil && old.ready(), st != nil && st.ready()
	if wasReady && (!isReady || old.queue != st.queue || old.order != st.order || old.runAt != st.runAt ||
		old.typ != st.typ || old.target != st.target || !slices.Equal(old.labelList(), st.labelList())) {
		m.remove(ref.tenant, old.queue, ref.id)
		wasReady = false
	}
	if isReady && !wasReady {
		m.add(ref.tenant, st.queue, readyItemOf(ref.id, st))
	}
	var oq, nq string
	var os, ns Status
	if old != nil {
		oq, os = old.queue, old.status
	}
	if st != nil {
		nq, ns = st.queue, st.status
	}
	if oq == nq && os == ns {
		return
	}
	if oq != "" {
		m.count(ref.tenant, oq, os, "")
		*shown = append(*shown, countMove{ref.tenant, oq, os, ""})
	}
	if nq != "" {
		m.count(ref.tenant, nq, "", ns)
		*shown = append(*shown, countMove{ref.tenant, nq, "", ns})
	}
}

// showCounts applies count moves to the counts readers are shown.
func (m *readyMirror) showCounts(moves []countMove) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mv := range moves {
		q := m.queue(tenantQueue{mv.tenant, mv.queue})
		if mv.from != "" {
			q.shown[mv.from]--
			if q.shown[mv.from] <= 0 {
				delete(q.shown, mv.from)
			}
		}
		if mv.to != "" {
			q.shown[mv.to]++
		}
		m.dropIfIdle(tenantQueue{mv.tenant, mv.queue}, q)
	}
}

func readyItemOf(id string, st *nodeState) readyItem {
	return readyItem{order: st.order, id: id, runAt: st.runAt, typ: st.typ, target: st.target, labels: st.labelList()}
}

// readySets returns every queue's ready entries (claimable or delayed) by
// tenant and queue, for tether check.
func (m *readyMirror) readySets() map[tenantQueue][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[tenantQueue][]string{}
	for tq, q := range m.queues {
		for id := range q.present {
			out[tq] = append(out[tq], id)
		}
	}
	return out
}
