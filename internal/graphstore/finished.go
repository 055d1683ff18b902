package graphstore

import (
	"cmp"
	"slices"
	"strings"
)

// finishedItem is a finished node waiting for retention: when it last
// changed (unix ns) and its id.
type finishedItem struct {
	at int64
	id string
}

// finishedQueue is a tenant's finished nodes in the order they finished.
// A node that changes again (a title edit, a requeue and a second finish)
// is pushed again; the older item goes stale and is skipped when reached,
// since the node's state no longer matches it. Only the writer touches it.
type finishedQueue struct {
	items []finishedItem
	head  int
}

// compact drops the consumed items once they are most of the slice.
func (q *finishedQueue) compact() {
	if q.head > 1024 && q.head > len(q.items)/2 {
		q.items = slices.Delete(q.items, 0, q.head)
		q.head = 0
	}
}

// finishedQueue returns tenant's queue (nil when it has none).
func (t *table) finishedQueue(tenant string) *finishedQueue { return t.finished[tenant] }

// noteFinished queues a node that has just finished or changed while
// finished (call on the writer).
func (t *table) noteFinished(ref nodeRef, old, st *nodeState) {
	if st == nil || !st.status.Terminal() {
		return
	}
	if old != nil && old.status.Terminal() && old.changed == st.changed {
		return
	}
	q := t.finished[ref.tenant]
	if q == nil {
		q = &finishedQueue{}
		t.finished[ref.tenant] = q
	}
	q.items = append(q.items, finishedItem{at: st.changed, id: ref.id})
}

// fillFinished queues every finished node in the order it last changed
// (rebuild).
func (t *table) fillFinished() {
	for e := range t.nodes.all() {
		if e.st.status.Terminal() {
			t.noteFinished(e.ref, nil, &e.st)
		}
	}
	for _, q := range t.finished {
		slices.SortFunc(q.items, func(a, b finishedItem) int {
			return cmp.Or(cmp.Compare(a.at, b.at), strings.Compare(a.id, b.id))
		})
	}
}
