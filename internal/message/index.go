package message

import (
	"container/heap"
	"sync"
	"time"

	"github.com/google/btree"
)

// The inbox indexes: for every recipient (an identity, or a node) the
// messages still kept, and the unread ones, in inbox order, overall and per
// thread. They hold no bodies: every listed message is read from the store.

// entry places a message in inbox order: priority high first, then oldest,
// then id.
type entry struct {
	priority int64
	created  int64 // unix ns
	id       string
}

func lessEntry(a, b entry) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.created != b.created {
		return a.created < b.created
	}
	return a.id < b.id
}

func entryOf(r *Record) entry {
	return entry{priority: r.Priority, created: r.CreatedAt.UnixNano(), id: r.ID}
}

// trees are one recipient's messages (or one thread of them).
type trees struct {
	all, unread *btree.BTreeG[entry]
}

func newTrees() *trees {
	return &trees{all: btree.NewG(16, lessEntry), unread: btree.NewG(16, lessEntry)}
}

func (t *trees) empty() bool { return t.all.Len() == 0 }

// box is one recipient's messages.
type box struct {
	trees
	threads map[string]*trees
}

// boxKey names a recipient of a tenant: an identity, or a node. Identities
// and nodes are separate key spaces, so the box of node n1 is not the box
// of an identity whose subject spells "node:n1": a message to a node
// reaches whoever holds the node, and only through the lease (recipients).
type boxKey struct {
	tenant string
	node   bool // name is a node id, not a subject
	name   string
}

// identityBox is the box of the messages to identity sub.
func identityBox(tenant, sub string) boxKey { return boxKey{tenant: tenant, name: sub} }

// nodeBox is the box of the messages to node id.
func nodeBox(tenant, id string) boxKey { return boxKey{tenant: tenant, node: true, name: id} }

// placed is what the index must know of a message to move or drop it.
type placed struct {
	key    boxKey
	thread string
	e      entry
}

func placedOf(tenant string, r *Record) placed {
	return placed{key: r.box(tenant), thread: r.Thread, e: entryOf(r)}
}

// index is every tenant's inbox indexes, with the sweep's heap of the
// instants messages leave them.
type index struct {
	mu      sync.Mutex
	boxes   map[boxKey]*box
	due     dueHeap
	expired func() // counts a message that expired unread
	// sending holds the messages to nodes whose send has committed but is
	// not durable yet, by recipient (gone.go): a node removed meanwhile
	// must expire them too.
	sending map[boxKey]map[string]struct{}
}

func newIndex(expired func()) *index {
	return &index{boxes: map[boxKey]*box{}, expired: expired}
}

// add puts a message in its recipient's trees (unread unless read), to leave
// them at forget (zero: never). Call with mu held.
func (ix *index) add(p placed, read bool, forget time.Time) {
	b, ok := ix.boxes[p.key]
	if !ok {
		b = &box{trees: *newTrees()}
		ix.boxes[p.key] = b
	}
	ts := []*trees{&b.trees}
	if p.thread != "" {
		th, ok := b.threads[p.thread]
		if !ok {
			if b.threads == nil {
				b.threads = map[string]*trees{}
			}
			th = newTrees()
			b.threads[p.thread] = th
		}
		ts = append(ts, th)
	}
	for _, t := range ts {
		t.all.ReplaceOrInsert(p.e)
		if !read {
			t.unread.ReplaceOrInsert(p.e)
		}
	}
	if !forget.IsZero() {
		heap.Push(&ix.due, dueItem{at: forget.UnixNano(), p: p, expiry: !read})
	}
}

// markRead moves a message out of the unread trees; it leaves the index at
// forget. Call with mu held.
func (ix *index) markRead(p placed, forget time.Time) {
	b, ok := ix.boxes[p.key]
	if !ok {
		return
	}
	b.unread.Delete(p.e)
	if th, ok := b.threads[p.thread]; ok {
		th.unread.Delete(p.e)
	}
	heap.Push(&ix.due, dueItem{at: forget.UnixNano(), p: p})
}

// drop takes a message out of the index; it reports whether it was unread.
// Call with mu held.
func (ix *index) drop(p placed) (wasUnread bool) {
	b, ok := ix.boxes[p.key]
	if !ok {
		return false
	}
	_, wasUnread = b.unread.Delete(p.e)
	b.all.Delete(p.e)
	if th, ok := b.threads[p.thread]; ok {
		th.unread.Delete(p.e)
		th.all.Delete(p.e)
		if th.empty() {
			delete(b.threads, p.thread)
		}
	}
	if b.empty() {
		delete(ix.boxes, p.key)
	}
	return wasUnread
}

// sweep drops every message due at or before now: an unread one has
// expired (and is counted), a read one has been kept long enough. It
// returns the next instant something is due (zero: none). Call with mu
// held.
func (ix *index) sweep(now time.Time) time.Time {
	n := now.UnixNano()
	for ix.due.Len() > 0 && ix.due[0].at <= n {
		it := heap.Pop(&ix.due).(dueItem)
		b, ok := ix.boxes[it.p.key]
		if !ok {
			continue
		}
		_, unread := b.unread.Get(it.p.e)
		if !unread && it.expiry {
			continue // read before its expiry: its own retention item drops it
		}
		if ix.drop(it.p) {
			ix.expired()
		}
	}
	if ix.due.Len() == 0 {
		return time.Time{}
	}
	return time.Unix(0, ix.due[0].at)
}

// unread is how many unread messages a recipient has. Call with mu held.
func (ix *index) unread(k boxKey) int64 {
	if b, ok := ix.boxes[k]; ok {
		return int64(b.unread.Len())
	}
	return 0
}

// pick returns up to n entries of recipient k after pivot (nil: from the
// start) in inbox order. Call with mu held.
func (ix *index) pick(k boxKey, thread string, unreadOnly bool, pivot *entry, n int) []entry {
	b, ok := ix.boxes[k]
	if !ok {
		return nil
	}
	t := &b.trees
	if thread != "" {
		if t, ok = b.threads[thread]; !ok {
			return nil
		}
	}
	tr := t.all
	if unreadOnly {
		tr = t.unread
	}
	var out []entry
	visit := func(e entry) bool {
		if pivot != nil && e == *pivot {
			return true
		}
		out = append(out, e)
		return len(out) < n
	}
	if pivot == nil {
		tr.Ascend(visit)
	} else {
		tr.AscendGreaterOrEqual(*pivot, visit)
	}
	return out
}

// dueItem is a message that leaves the index at `at` (unix ns).
type dueItem struct {
	at     int64
	p      placed
	expiry bool // its ttl, rather than its retention after being read
}

type dueHeap []dueItem

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueItem)) }
func (h *dueHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
