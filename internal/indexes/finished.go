package indexes

import (
	"cmp"
	"slices"
	"strings"
)

// FinishedItem is a finished node waiting for retention: when it last
// changed (unix ns) and its id.
type FinishedItem struct {
	At int64
	ID string
}

// FinishedQueue is a tenant's finished nodes in the order they finished.
// A node that changes again (a title edit, a requeue and a second finish)
// is pushed again; the older item goes stale and is skipped when reached,
// since the node's state no longer matches it. Only the writer touches it.
type FinishedQueue struct {
	Items []FinishedItem
	Head  int
}

// Compact drops the consumed items once they are most of the slice.
func (q *FinishedQueue) Compact() {
	if q.Head > 1024 && q.Head > len(q.Items)/2 {
		q.Items = slices.Delete(q.Items, 0, q.Head)
		q.Head = 0
	}
}

// FinishedQueue returns tenant's queue (nil when it has none).
func (t *Table) FinishedQueue(tenant string) *FinishedQueue { return t.finished[tenant] }

// noteFinished queues a node that has just finished or changed while
// finished (call on the writer).
func (t *Table) noteFinished(ref NodeRef, old, st *NodeState) {
	if st == nil || !st.Status.Terminal() {
		return
	}
	if old != nil && old.Status.Terminal() && old.Changed == st.Changed {
		return
	}
	q := t.finished[ref.Tenant]
	if q == nil {
		q = &FinishedQueue{}
		t.finished[ref.Tenant] = q
	}
	q.Items = append(q.Items, FinishedItem{At: st.Changed, ID: ref.ID})
}

// FillFinished queues every finished node in the order it last changed
// (rebuild).
func (t *Table) FillFinished() {
	for e := range t.Nodes.all() {
		if e.State.Status.Terminal() {
			t.noteFinished(e.Ref, nil, &e.State)
		}
	}
	for _, q := range t.finished {
		slices.SortFunc(q.Items, func(a, b FinishedItem) int {
			return cmp.Or(cmp.Compare(a.At, b.At), strings.Compare(a.ID, b.ID))
		})
	}
}
