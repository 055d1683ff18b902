// Package deadline is the indexed deadline heap the server's timers share:
// a min-heap of instants paired with a map from key to heap position, so
// setting, moving and removing a key's deadline are O(log n) (etcd's
// LeaseExpiredNotifier shape). Its users: lease keeps lease expiries in one
// (leasing/heap.go), schedule the instants its schedules are next due
// (schedule/loop.go), message the instant each message leaves the inbox
// indexes (message/index.go).
//
// Invariants:
//   - A key is in the heap at most once; Set on a key it holds moves it.
//   - Peek and Pop give the earliest deadline; ties come out in no fixed
//     order.
//   - Due lists what is due without removing it, earliest first, in
//     O(k log k) for k keys.
//   - A Heap is not safe for concurrent use: its owner holds its own lock.
package deadline

import (
	"container/heap"
	"time"
)

// Heap is an indexed min-heap of deadlines by key. The zero value is
// empty and ready.
type Heap[K comparable] struct {
	items items[K]
	index map[K]*item[K]
}

type item[K comparable] struct {
	key K
	at  time.Time
	pos int
}

// Len is how many keys have a deadline.
func (h *Heap[K]) Len() int { return len(h.items) }

// Set adds key's deadline at, or moves it there, and reports whether key
// now has the earliest deadline.
func (h *Heap[K]) Set(key K, at time.Time) bool {
	if it, ok := h.index[key]; ok {
		it.at = at
		heap.Fix(&h.items, it.pos)
	} else {
		if h.index == nil {
			h.index = map[K]*item[K]{}
		}
		it := &item[K]{key: key, at: at}
		heap.Push(&h.items, it)
		h.index[key] = it
	}
	return h.items[0].key == key
}

// Remove drops key's deadline and reports whether it had one.
func (h *Heap[K]) Remove(key K) bool {
	it, ok := h.index[key]
	if !ok {
		return false
	}
	heap.Remove(&h.items, it.pos)
	delete(h.index, key)
	return true
}

// Get returns key's deadline.
func (h *Heap[K]) Get(key K) (time.Time, bool) {
	if it, ok := h.index[key]; ok {
		return it.at, true
	}
	return time.Time{}, false
}

// Peek returns the earliest deadline and its key.
func (h *Heap[K]) Peek() (key K, at time.Time, ok bool) {
	if len(h.items) == 0 {
		return key, at, false
	}
	return h.items[0].key, h.items[0].at, true
}

// Pop removes and returns the earliest deadline and its key.
func (h *Heap[K]) Pop() (key K, at time.Time, ok bool) {
	if len(h.items) == 0 {
		return key, at, false
	}
	it := heap.Pop(&h.items).(*item[K])
	delete(h.index, it.key)
	return it.key, it.at, true
}

// Due returns up to max keys whose deadline is at or before now, earliest
// first, without removing them.
func (h *Heap[K]) Due(now time.Time, max int) []K {
	// Best-first over the heap array: a frontier of positions, earliest
	// deadline first, starting at the root; taking a position offers its
	// two children. So the k keys come out earliest first in O(k log k).
	var out []K
	frontier := positions[K]{items: h.items}
	if len(h.items) > 0 {
		frontier.idx = append(frontier.idx, 0)
	}
	for frontier.Len() > 0 && len(out) < max {
		i := heap.Pop(&frontier).(int)
		if h.items[i].at.After(now) {
			break // the earliest left is not due, so nothing is
		}
		out = append(out, h.items[i].key)
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(h.items) {
				heap.Push(&frontier, c)
			}
		}
	}
	return out
}

type items[K comparable] []*item[K]

func (h items[K]) Len() int           { return len(h) }
func (h items[K]) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h items[K]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}

func (h *items[K]) Push(x any) {
	it := x.(*item[K])
	it.pos = len(*h)
	*h = append(*h, it)
}

func (h *items[K]) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.pos = -1
	return it
}

// positions is a min-heap of positions in items, by deadline.
type positions[K comparable] struct {
	items items[K]
	idx   []int
}

func (p positions[K]) Len() int { return len(p.idx) }
func (p positions[K]) Less(i, j int) bool {
	return p.items[p.idx[i]].at.Before(p.items[p.idx[j]].at)
}
func (p positions[K]) Swap(i, j int) { p.idx[i], p.idx[j] = p.idx[j], p.idx[i] }
func (p *positions[K]) Push(x any)   { p.idx = append(p.idx, x.(int)) }
func (p *positions[K]) Pop() any {
	x := p.idx[len(p.idx)-1]
	p.idx = p.idx[:len(p.idx)-1]
	return x
}
