package lease

import (
	"container/heap"
	"sync"
	"time"
)

// nodeRef names one node of one tenant.
type nodeRef struct{ tenant, id string }

// deadlines is a min-heap of lease deadlines paired with a map from node to
// heap item, so adding, moving and removing a deadline are O(log n)
// (etcd's LeaseExpiredNotifier shape). It is a hint for the reaper: the node
// record is the authority on whether a lease has ended.
type deadlines struct {
	mu    sync.Mutex
	items deadlineHeap
	index map[nodeRef]*deadlineItem
}

type deadlineItem struct {
	ref nodeRef
	at  time.Time
	pos int
}

type deadlineHeap []*deadlineItem

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}
func (h *deadlineHeap) Push(x any) {
	it := x.(*deadlineItem)
	it.pos = len(*h)
	*h = append(*h, it)
}
func (h *deadlineHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.pos = -1
	return it
}

func newDeadlines() *deadlines { return &deadlines{index: map[nodeRef]*deadlineItem{}} }

// set adds or moves the deadline of ref; it reports whether ref is now the
// earliest deadline.
func (d *deadlines) set(ref nodeRef, at time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if it, ok := d.index[ref]; ok {
		it.at = at
		heap.Fix(&d.items, it.pos)
	} else {
		it := &deadlineItem{ref: ref, at: at}
		heap.Push(&d.items, it)
		d.index[ref] = it
	}
	return d.items[0].ref == ref
}

func (d *deadlines) remove(ref nodeRef) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if it, ok := d.index[ref]; ok {
		heap.Remove(&d.items, it.pos)
		delete(d.index, ref)
	}
}

// next returns the earliest deadline.
func (d *deadlines) next() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.items) == 0 {
		return time.Time{}, false
	}
	return d.items[0].at, true
}

// due returns up to max refs whose deadline is at or before now, earliest
// first, without removing them (the expiry transaction removes them).
func (d *deadlines) due(now time.Time, max int) []nodeRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	// Best-first over the heap array: a frontier of positions, earliest
	// deadline first, starting at the root; taking a position offers its
	// two children. So the k refs come out earliest first in O(k log k).
	var out []nodeRef
	frontier := positions{items: d.items}
	if len(d.items) > 0 {
		frontier.idx = append(frontier.idx, 0)
	}
	for frontier.Len() > 0 && len(out) < max {
		i := heap.Pop(&frontier).(int)
		if d.items[i].at.After(now) {
			break // the earliest left is not due, so nothing is
		}
		out = append(out, d.items[i].ref)
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(d.items) {
				heap.Push(&frontier, c)
			}
		}
	}
	return out
}

// positions is a min-heap of positions in a deadlineHeap, by deadline.
type positions struct {
	items deadlineHeap
	idx   []int
}

func (p positions) Len() int           { return len(p.idx) }
func (p positions) Less(i, j int) bool { return p.items[p.idx[i]].at.Before(p.items[p.idx[j]].at) }
func (p positions) Swap(i, j int)      { p.idx[i], p.idx[j] = p.idx[j], p.idx[i] }
func (p *positions) Push(x any)        { p.idx = append(p.idx, x.(int)) }
func (p *positions) Pop() any {
	x := p.idx[len(p.idx)-1]
	p.idx = p.idx[:len(p.idx)-1]
	return x
}
