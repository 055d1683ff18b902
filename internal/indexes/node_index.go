package indexes

import (
	"hash/maphash"
	"iter"
)

// NodeIndex is the table's map from a node's ref to its entry. It is keyed
// by a 64-bit hash of the ref, so a slot holds 16 bytes where one keyed by
// the ref itself held 40 (a million nodes spend ~25 MB instead of ~60); the
// entry found is checked against the ref, and the rare ref whose hash
// another ref already holds is kept in clash, keyed by the ref.
type NodeIndex struct {
	seed   maphash.Seed
	byHash map[uint64]*NodeEntry
	clash  map[NodeRef]*NodeEntry
	// hashed, when set, replaces the hash (tests make refs clash with it).
	hashed func(NodeRef) uint64
}

func newNodeIndex(size int) NodeIndex {
	return NodeIndex{seed: maphash.MakeSeed(), byHash: make(map[uint64]*NodeEntry, size), clash: map[NodeRef]*NodeEntry{}}
}

func (x *NodeIndex) hash(ref NodeRef) uint64 {
	if x.hashed != nil {
		return x.hashed(ref)
	}
	var h maphash.Hash
	h.SetSeed(x.seed)
	h.WriteString(ref.Tenant)
	h.WriteByte(0) // ("a", "bc") and ("ab", "c") hash apart; a clash is checked anyway
	h.WriteString(ref.ID)
	return h.Sum64()
}

// Get is ref's entry (nil, false for none).
func (x *NodeIndex) Get(ref NodeRef) (*NodeEntry, bool) {
	if e, ok := x.byHash[x.hash(ref)]; ok && e.Ref == ref {
		return e, true
	}
	if len(x.clash) == 0 {
		return nil, false
	}
	e, ok := x.clash[ref]
	return e, ok
}

// set makes e ref's entry (e.ref is ref).
func (x *NodeIndex) set(ref NodeRef, e *NodeEntry) {
	h := x.hash(ref)
	if cur, ok := x.byHash[h]; ok && cur.Ref != ref {
		x.clash[ref] = e
		return
	}
	x.byHash[h] = e
}

// delete drops ref's entry; a clashing ref of the same hash takes its slot.
func (x *NodeIndex) delete(ref NodeRef) {
	h := x.hash(ref)
	if cur, ok := x.byHash[h]; !ok || cur.Ref != ref {
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

// Len is how many entries there are.
func (x *NodeIndex) Len() int { return len(x.byHash) + len(x.clash) }

// all yields every entry, in no order.
func (x *NodeIndex) all() iter.Seq[*NodeEntry] {
	return func(yield func(*NodeEntry) bool) {
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
