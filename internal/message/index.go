package message

import (
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/tether-run/tether/internal/deadline"
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
// instant each message leaves them: its expiry while unread, Retention
// after it was read (one deadline per message, moved when it is read).
type index struct {
	mu      sync.Mutex
	boxes   map[boxKey]*box
	due     deadline.Heap[placed]
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
		ix.due.Set(p, forget)
	}
}

// markRead moves a message out of the unread trees; it leaves the index at
// forget, in place of its expiry. Call with mu held.
func (ix *index) markRead(p placed, forget time.Time) {
	b, ok := ix.boxes[p.key]
	if !ok {
		return
	}
	b.unread.Delete(p.e)
	if th, ok := b.threads[p.thread]; ok {
		th.unread.Delete(p.e)
	}
	ix.due.Set(p, forget)
}

// drop takes a message out of the trees once the sweep popped its
// deadline; it reports whether it was unread. Call with mu held.
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
	for {
		_, at, ok := ix.due.Peek()
		if !ok {
			return time.Time{}
		}
		if at.After(now) {
			return at
		}
		p, _, _ := ix.due.Pop()
		if ix.drop(p) {
			ix.expired()
		}
	}
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
