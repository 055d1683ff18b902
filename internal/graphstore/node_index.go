package graphstore

import (
	"hash/maphash"
	"iter"
)

// nodeIndex is the table's map from a node's ref to its entry. It is keyed
// by a 64-bit hash of the ref, so a slot holds 16 bytes where one keyed by
// the ref itself held 40 (a million nodes spend ~25 MB instead of ~60); the
// entry found is checked against the ref, and the rare ref whose hash
// another ref already holds is kept in clash, keyed by the ref.
type nodeIndex struct {
	seed   maphash.Seed
	byHash map[uint64]*nodeEntry
	clash  map[nodeRef]*nodeEntry
	// hashed, when set, replaces the hash (tests make refs clash with it).
	hashed func(nodeRef) uint64
}

func newNodeIndex(size int) nodeIndex {
	return nodeIndex{seed: maphash.MakeSeed(), byHash: make(map[uint64]*nodeEntry, size), clash: map[nodeRef]*nodeEntry{}}
}

func (x *nodeIndex) hash(ref nodeRef) uint64 {
	if x.hashed != nil {
		return x.hashed(ref)
	}
	var h maphash.Hash
	h.SetSeed(x.seed)
	h.WriteString(ref.tenant)
	h.WriteByte(0) // ("a", "bc") and ("ab", "c") hash apart; a clash is checked anyway
	h.WriteString(ref.id)
	return h.Sum64()
}

// get is ref's entry (nil, false for none).
func (x *nodeIndex) get(ref nodeRef) (*nodeEntry, bool) {
	if e, ok := x.byHash[x.hash(ref)]; ok && e.ref == ref {
		return e, true
	}
	if len(x.clash) == 0 {
		return nil, false
	}
	e, ok := x.clash[ref]
	return e, ok
}

// set makes e ref's entry (e.ref is ref).
func (x *nodeIndex) set(ref nodeRef, e *nodeEntry) {
	h := x.hash(ref)
	if cur, ok := x.byHash[h]; ok && cur.ref != ref {
		x.clash[ref] = e
		return
	}
	x.byHash[h] = e
}

// delete drops ref's entry; a clashing ref of the same hash takes its slot.
func (x *nodeIndex) delete(ref nodeRef) {
	h := x.hash(ref)
	if cur, ok := x.byHash[h]; !ok || cur.ref != ref {
		delete(x.clash, ref)
		return
	}
	delete(x.byHash, h)
	for r, e := range x.clash {
		if x.hash(r) == h {
			x.byHash[h] = e
			delete(x.clash, r)
			return
		}
	}
}

// len is how many entries there are.
func (x *nodeIndex) len() int { return len(x.byHash) + len(x.clash) }

// all yields every entry, in no order.
func (x *nodeIndex) all() iter.Seq[*nodeEntry] {
	return func(yield func(*nodeEntry) bool) {
		for _, e := range x.byHash {
			if !yield(e) {
				return
			}
		}
		for _, e := range x.clash {
			if !yield(e) {
				return
			}
		}
	}
}
