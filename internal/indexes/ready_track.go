package indexes

import (
	"maps"
	"slices"
	"time"

	"github.com/tether-run/tether/internal/records"
)

// countMove is one node moving between statuses of a queue ("" for none).
type countMove struct {
	tenant, queue string
	from, to      records.Status
}

// trackLocked moves a node's entry to the state st (nil: the node is gone)
// in the ready mirror and its queue's status counts, and sets e.st to it
// (had: e held a state before; a new entry's is ignored). It runs on the
// writer inside Table.Fold, under the mirror's mu, so claim-next (also on the
// writer) always sees what the transactions before it left, and readers
// walking the trees never see an entry change in them: an entry leaves the
// trees before its state changes and enters them after. The counts readers
// are shown move only once the change is durable: track appends the moves
// to shown, for the caller to apply then (showCounts).
func (m *ReadyMirror) trackLocked(e *NodeEntry, had bool, st *NodeState, shown *[]countMove) {
	var old *NodeState
	if had {
		old = &e.State
		m.leaveLocked(e, st)
	}
	m.countLocked(e.Ref.Tenant, old, st, shown)
	if st == nil {
		return
	}
	e.State = *st
	if e.mirror == mirrorNone && e.State.ready() {
		m.addLocked(e)
	}
}

// track is trackLocked under the lock.
func (m *ReadyMirror) track(e *NodeEntry, had bool, st *NodeState, shown *[]countMove) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trackLocked(e, had, st, shown)
}

// leaveLocked takes e out of the mirror when st (nil: gone) files it
// elsewhere or not at all: anything the trees compare or the filters read
// changes.
func (m *ReadyMirror) leaveLocked(e *NodeEntry, st *NodeState) {
	if e.mirror == mirrorNone {
		return
	}
	old := &e.State
	if st == nil || !st.ready() || old.queue != st.queue || old.order != st.order || old.runAt != st.runAt ||
		old.typ != st.typ || old.target != st.target || old.labels != st.labels {
		m.removeLocked(e)
	}
}

// countLocked moves a node between its queues' status counts, from old to
// st (nil: none).
func (m *ReadyMirror) countLocked(tenant string, old, st *NodeState, shown *[]countMove) {
	var oq, nq string
	var os, ns records.Status
	if old != nil {
		oq, os = old.queue.String(), old.Status.Status()
	}
	if st != nil {
		nq, ns = st.queue.String(), st.Status.Status()
	}
	if oq == nq && os == ns {
		return
	}
	if oq != "" {
		m.count(tenant, oq, os, "")
		*shown = append(*shown, countMove{tenant, oq, os, ""})
	}
	if nq != "" {
		m.count(tenant, nq, "", ns)
		*shown = append(*shown, countMove{tenant, nq, "", ns})
	}
}

// ShowCounts applies count moves to the counts readers are shown.
func (m *ReadyMirror) ShowCounts(moves []countMove) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mv := range moves {
		q := m.queue(TenantQueue{mv.tenant, mv.queue})
		if mv.from != "" {
			q.shown[mv.from]--
			if q.shown[mv.from] <= 0 {
				delete(q.shown, mv.from)
			}
		}
		if mv.to != "" {
			q.shown[mv.to]++
		}
		m.dropIfIdle(TenantQueue{mv.tenant, mv.queue}, q)
	}
}

// ReadySets returns every queue's ready entries (claimable or delayed) by
// tenant and queue, for tether check.
func (m *ReadyMirror) ReadySets() map[TenantQueue][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[TenantQueue][]string{}
	for tq, q := range m.queues {
		for _, ix := range append([]*claimIndex{q.open}, slices.Collect(maps.Values(q.targeted))...) {
			ix.all.Ascend(func(e *NodeEntry) bool {
				out[tq] = append(out[tq], e.Ref.ID)
				return true
			})
		}
	}
	for _, e := range m.delayed.Due(time.Unix(1<<62, 0), m.delayed.Len()) {
		tq := TenantQueue{e.Ref.Tenant, e.State.queue.String()}
		out[tq] = append(out[tq], e.Ref.ID)
	}
	return out
}
