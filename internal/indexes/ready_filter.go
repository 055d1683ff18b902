package indexes

import (
	"slices"
	"strings"
	"time"

	"github.com/google/btree"

	"github.com/tether-run/tether/internal/records"
)

// ReadyFilter says which claimable nodes one claimer may take: those of one
// of Types (any type when empty) that carry every one of Labels, and whose
// target is unset or Sub. A node targeted to another sub is never offered.
type ReadyFilter struct {
	Types  []string
	Labels []string
	Sub    string
}

// normal returns f with Types free of repeats: each type is one source of the
// merge in sources, and a repeated one would hand out its items twice.
func (f ReadyFilter) normal() ReadyFilter {
	if len(f.Types) > 1 {
		types := slices.Clone(f.Types)
		slices.Sort(types)
		f.Types = slices.Compact(types)
	}
	return f
}

// matches reports whether f's claimer may take e (call with the mirror's mu
// held, as e.st is read).
func (f ReadyFilter) matches(e *NodeEntry) bool {
	if target := e.State.target.String(); target != "" && target != f.Sub {
		return false
	}
	if len(f.Types) > 0 && !slices.Contains(f.Types, e.State.typ.String()) {
		return false
	}
	for _, l := range f.Labels {
		if !e.State.labels.hasLabel(l) {
			return false
		}
	}
	return true
}

// sources appends to dst the trees whose merge, in claim order, holds every
// item of q that f matches and as few others as the indexes allow: for the
// untargeted items and for those targeted to f.Sub, the smaller of the union
// of f's type trees and f's rarest label tree (or the whole partition when f
// has neither). Whatever else f asks is checked on each item by matches.
func (f ReadyFilter) sources(q *queueMirror, dst []*readyTree) []*readyTree {
	dst = q.open.sources(f, dst)
	if f.Sub != "" {
		if ix := q.targeted[f.Sub]; ix != nil {
			dst = ix.sources(f, dst)
		}
	}
	return dst
}

// claimIndex orders one target's claimable items of a queue (or the
// untargeted ones) in claim order: all of them, and by type and by label, so
// a filtered claim starts from the fewest candidates in O(log n).
type claimIndex struct {
	all     *readyTree
	byType  map[string]*readyTree
	byLabel map[string]*readyTree
}

func newClaimIndex() *claimIndex {
	return &claimIndex{
		all:     btree.NewG(BTreeDegree, lessClaimOrder),
		byType:  map[string]*readyTree{},
		byLabel: map[string]*readyTree{},
	}
}

func (ix *claimIndex) insert(e *NodeEntry) {
	ix.all.ReplaceOrInsert(e)
	ix.insertFiltered(e)
}

// insertFiltered puts e in the trees of its type and labels.
func (ix *claimIndex) insertFiltered(e *NodeEntry) {
	insertInto(ix.byType, e.State.typ.String(), e)
	for l := range e.State.labels.eachLabel() {
		insertInto(ix.byLabel, l, e)
	}
}

func (ix *claimIndex) delete(e *NodeEntry) {
	ix.all.Delete(e)
	deleteFrom(ix.byType, e.State.typ.String(), e)
	for l := range e.State.labels.eachLabel() {
		deleteFrom(ix.byLabel, l, e)
	}
}

func insertInto(trees map[string]*readyTree, key string, it *NodeEntry) {
	t, ok := trees[key]
	if !ok {
		t = btree.NewG(BTreeDegree, lessClaimOrder)
		trees[key] = t
	}
	t.ReplaceOrInsert(it)
}

// deleteFrom drops empty trees, so that labels used once and gone (a run id,
// a ticket number) leave nothing behind.
func deleteFrom(trees map[string]*readyTree, key string, it *NodeEntry) {
	if t, ok := trees[key]; ok {
		t.Delete(it)
		if t.Len() == 0 {
			delete(trees, key)
		}
	}
}

func (ix *claimIndex) sources(f ReadyFilter, dst []*readyTree) []*readyTree {
	base := len(dst)
	dst = append(dst, ix.all)
	size := ix.all.Len()
	if len(f.Types) > 0 {
		mark, n := len(dst), 0
		for _, typ := range f.Types {
			if t, ok := ix.byType[typ]; ok {
				dst = append(dst, t)
				n += t.Len()
			}
		}
		if n < size {
			dst = append(dst[:base], dst[mark:]...)
			size = n
		} else {
			dst = dst[:mark]
		}
	}
	for _, l := range f.Labels {
		t, ok := ix.byLabel[l]
		if !ok {
			return dst[:base] // no item here carries l
		}
		if t.Len() < size {
			dst = append(dst[:base], t)
			size = t.Len()
		}
	}
	if size == 0 {
		return dst[:base]
	}
	return dst
}

const (
	// walkChunk is how many ids walk hands to its caller per hold of the
	// lock; walkLook bounds how many items it looks at per hold, so a
	// filter that the indexes narrow badly never holds up the writer's
	// commit hooks for long.
	walkChunk = 64
	walkLook  = 512
	walkFirst = 8 // items looked at in the first hold
)

// walk calls fn, in claim order, with the ids of the claimable items of a
// queue that are in the trees plan picks and that match accepts, until fn
// returns false. It gathers a chunk at a time under the lock and calls fn
// without it, so fn may use the mirror (QueueCount) and the writer's hooks
// never wait on a caller. The place between chunks is a copy of the order
// and id of the last entry looked at (the entry itself may change or leave
// once the lock is let go), which stays a valid place in claim order, and
// plan is asked again for every chunk, as the trees may have changed
// between them.
func (m *ReadyMirror) walk(tenant, queue string, now time.Time, plan func(*queueMirror, []*readyTree) []*readyTree, match func(*NodeEntry) bool, fn func(id string) bool) {
	var (
		srcs  []*readyTree
		ids   []string
		after *NodeEntry // the place: a pivot in no tree, or nil for the start
		done  bool
	)
	// Most callers take the first match (claim-next): look at a few items
	// first, and more each round after that.
	look := walkFirst
	for !done {
		ids, done = ids[:0], true
		m.mu.Lock()
		m.promoteLocked(now.UnixMilli())
		if q, ok := m.queues[TenantQueue{tenant, queue}]; ok {
			srcs = plan(q, srcs[:0])
			ids, after, done = m.mergeLocked(srcs, after, match, ids, look)
		}
		m.mu.Unlock()
		look = min(look*4, walkLook)
		for _, id := range ids {
			if !fn(id) {
				return
			}
		}
	}
}

// mergeLocked merges srcs in claim order from just after the item after (from
// the start when nil) and appends to ids those of up to walkChunk items that
// match. It returns the place of the last item it looked at (a copy of its
// order and id: placeOf) and whether none is left.
//
// Each source gives up to its share of look items; where a source had
// more, the items of the others beyond its last one are not yet in order
// with the ones it still holds, so the merge stops at the least such last
// item (the horizon) and the next call resumes from there.
func (m *ReadyMirror) mergeLocked(srcs []*readyTree, after *NodeEntry, match func(*NodeEntry) bool, ids []string, look int) ([]string, *NodeEntry, bool) {
	if len(srcs) == 0 {
		return ids, after, true
	}
	share := max(look/len(srcs), min(look, walkChunk))
	buf := m.scratch[:0]
	var horizon *NodeEntry
	for _, t := range srcs {
		n := 0
		visit := func(it *NodeEntry) bool {
			if after != nil && !lessClaimOrder(after, it) {
				return true // the place itself
			}
			buf = append(buf, it)
			n++
			return n < share
		}
		if after == nil {
			t.Ascend(visit)
		} else {
			t.AscendGreaterOrEqual(after, visit)
		}
		if n == share {
			if last := buf[len(buf)-1]; horizon == nil || lessClaimOrder(last, horizon) {
				horizon = last
			}
		}
	}
	if len(srcs) > 1 {
		slices.SortFunc(buf, compareClaimOrder)
	}
	defer func() {
		clear(buf) // drop the pointers so removed entries can be collected
		m.scratch = buf[:0]
	}()
	var last *NodeEntry
	for _, it := range buf {
		if horizon != nil && lessClaimOrder(horizon, it) {
			break
		}
		last = it
		if match(it) {
			ids = append(ids, it.Ref.ID)
			if len(ids) == walkChunk {
				return ids, placeOf(after, last), false
			}
		}
	}
	if last != nil {
		after = placeOf(after, last)
	}
	return ids, after, horizon == nil
}

// placeOf copies e's order and id into the walk's place p (made when nil):
// a pivot for the trees that is in none of them.
func placeOf(p, e *NodeEntry) *NodeEntry {
	if p == nil {
		p = new(NodeEntry)
	}
	p.Ref.ID, p.State.order = e.Ref.ID, e.State.order
	return p
}

func compareClaimOrder(a, b *NodeEntry) int {
	if c := records.CompareOrder(&a.State.order, &b.State.order); c != 0 {
		return c
	}
	return strings.Compare(a.Ref.ID, b.Ref.ID)
}
