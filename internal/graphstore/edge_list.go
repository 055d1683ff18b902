package graphstore

import (
	"bytes"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/records"
)

// Direction of an edge walk relative to a node.
type Direction string

// Directions.
const (
	DirOut  Direction = "out"
	DirIn   Direction = "in"
	DirBoth Direction = "both"
)

// EdgeQuery selects the edges of one node.
type EdgeQuery struct {
	Dir            Direction
	Type           string
	IncludeRetired bool
	After          []byte
}

// Cursor phases: the first byte of an edge cursor.
const (
	phaseLiveOut    = 'O'
	phaseLiveIn     = 'I'
	phaseRetiredOut = 'P'
	phaseRetiredIn  = 'Q'
)

// EdgesOf lists the edges of node id: live ones first (out, then in, each in
// (type, peer) order), then retired ones (out, then in, oldest first per
// peer) when asked. fn receives each edge with the cursor that resumes the
// walk right after it; q.After takes such a cursor. In a View only durable
// edges are listed.
func (tx *Tx) EdgesOf(tenant, id string, q EdgeQuery, fn func(e *records.Edge, cursor []byte) (bool, error)) error {
	var phases []byte
	if q.Dir != DirIn {
		phases = append(phases, phaseLiveOut)
	}
	if q.Dir != DirOut {
		phases = append(phases, phaseLiveIn)
	}
	if q.IncludeRetired {
		if q.Dir != DirIn {
			phases = append(phases, phaseRetiredOut)
		}
		if q.Dir != DirOut {
			phases = append(phases, phaseRetiredIn)
		}
	}
	var afterPhase byte
	var afterRest []byte
	if len(q.After) > 0 {
		afterPhase, afterRest = q.After[0], q.After[1:]
		if !bytes.Contains(phases, []byte{afterPhase}) {
			return fault.Invalidf("cursor", "not a cursor of this list")
		}
	}
	skipping := afterPhase != 0
	for _, ph := range phases {
		if skipping && ph != afterPhase {
			continue
		}
		var after []byte
		if skipping {
			after, skipping = afterRest, false
		}
		var more bool
		var err error
		switch ph {
		case phaseLiveOut, phaseLiveIn:
			more, err = tx.walkLive(tenant, id, q.Type, ph, after, fn)
		default:
			more, err = tx.walkRetired(tenant, id, q.Type, ph, after, fn)
		}
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func slotCursor(phase byte, typ, peer string) []byte {
	c := append([]byte{phase}, typ...)
	c = append(c, records.KeySeparator)
	return append(c, peer...)
}

// walkLive lists the live edges of one direction in (type, peer) order,
// strictly after the cursor rest `after` (type 0x00 peer).
func (tx *Tx) walkLive(tenant, id, typ string, phase byte, after []byte, fn func(*records.Edge, []byte) (bool, error)) (bool, error) {
	dir := DirOut
	if phase == phaseLiveIn {
		dir = DirIn
	}
	for _, le := range tx.liveEdges(tenant, id, typ, dir) {
		peer := le.Edge.To
		if dir == DirIn {
			peer = le.Edge.From
		}
		cur := slotCursor(phase, le.Edge.Type, peer)
		if after != nil && bytes.Compare(cur[1:], after) <= 0 {
			continue
		}
		e := le.Edge.Clone()
		if !tx.writable {
			// Only what is durable: the stored record, if there is one yet.
			r, err := tx.storedLiveEdge(tenant, le.Edge.From, le.Edge.Type, le.Edge.To)
			if err != nil {
				return false, err
			}
			if r == nil || r.Seq != le.Seq {
				continue
			}
			e = &r.Edge
		}
		more, err := fn(e, cur)
		if err != nil || !more {
			return false, err
		}
	}
	return true, nil
}

// walkRetired lists retired edges of one direction from the store, in key
// order, strictly after the cursor rest `after`.
func (tx *Tx) walkRetired(tenant, id, typ string, phase byte, after []byte, fn func(*records.Edge, []byte) (bool, error)) (bool, error) {
	tag := byte(records.TagRetiredOut)
	if phase == phaseRetiredIn {
		tag = records.TagRetiredIn
	}
	base := records.NewKey(tag, tenant).Str(id)
	baseLen := len(base.Bytes())
	prefix := base.Bytes()
	if typ != "" {
		prefix = records.NewKey(tag, tenant).Str(id).Str(typ).Bytes()
	}
	var start []byte
	if after != nil {
		start = append(records.NewKey(tag, tenant).Str(id).Bytes(), after...)
	}
	more := true
	err := tx.kv.Scan(prefix, start, false, tag == records.TagRetiredOut, func(key, val []byte) (bool, error) {
		var e records.Edge
		if tag == records.TagRetiredOut {
			if err := decode(val, &e, key); err != nil {
				return false, err
			}
		} else {
			parts := records.SplitKey(key, 5) // tenant, to, type, from, seq
			if len(parts) != 5 || len(parts[4]) != 8 {
				return true, nil
			}
			out := records.RetiredEdgeKey(records.TagRetiredOut, tenant, string(parts[3]), string(parts[2]), string(parts[1]), records.Uint64FromBytes(parts[4]))
			ok, err := tx.getRecord(out, &e)
			if err != nil {
				return false, err
			}
			if !ok {
				return true, nil
			}
		}
		cursor := append([]byte{phase}, key[baseLen:]...)
		var err error
		more, err = fn(&e, cursor)
		return more, err
	})
	return more, err
}

// liveEdges returns the live edges of id of one type ("" for all) in one
// direction, in (type, peer) order, as this transaction sees them.
func (tx *Tx) liveEdges(tenant, id, typ string, dir Direction) []*indexes.LiveEdge {
	t := tx.store.table
	var out []*indexes.LiveEdge
	seen := map[indexes.EdgeSlot]bool{}
	for ref, le := range tx.edges {
		if ref.Tenant != tenant || (typ != "" && ref.Type != typ) {
			continue
		}
		var slot indexes.EdgeSlot
		switch {
		case dir == DirOut && ref.From == id:
			slot = indexes.EdgeSlot{Type: ref.Type, Peer: ref.To}
		case dir == DirIn && ref.To == id:
			slot = indexes.EdgeSlot{Type: ref.Type, Peer: ref.From}
		default:
			continue
		}
		seen[slot] = true
		if le != nil {
			out = append(out, le)
		}
	}
	if !tx.writable {
		t.Mu.RLock()
		defer t.Mu.RUnlock()
	}
	if e, ok := t.Nodes.Get(indexes.NodeRef{Tenant: tenant, ID: id}); ok {
		m := e.OutEdges()
		if dir == DirIn {
			m = e.InEdges()
		}
		for slot, le := range m {
			if (typ == "" || slot.Type == typ) && !seen[slot] {
				out = append(out, le)
			}
		}
	}
	slices.SortFunc(out, func(a, b *indexes.LiveEdge) int {
		if c := strings.Compare(a.Edge.Type, b.Edge.Type); c != 0 {
			return c
		}
		if dir == DirIn {
			return strings.Compare(a.Edge.From, b.Edge.From)
		}
		return strings.Compare(a.Edge.To, b.Edge.To)
	})
	return out
}

// LiveEdges returns the live edges of id of one type in one direction.
func (tx *Tx) LiveEdges(tenant, id, typ string, dir Direction) ([]*records.Edge, error) {
	var out []*records.Edge
	err := tx.EdgesOf(tenant, id, EdgeQuery{Dir: dir, Type: typ}, func(e *records.Edge, _ []byte) (bool, error) {
		out = append(out, e)
		return true, nil
	})
	return out, err
}

// reaches reports whether a path of live depends_on/parent_of edges leads from
// start to goal.
func (tx *Tx) reaches(tenant, start, goal string) bool {
	if start == goal {
		return true
	}
	seen := map[string]bool{start: true}
	frontier := []string{start}
	for len(frontier) > 0 {
		id := frontier[len(frontier)-1]
		frontier = frontier[:len(frontier)-1]
		for _, le := range tx.liveEdges(tenant, id, "", DirOut) {
			if le.Edge.Type != EdgeDependsOn && le.Edge.Type != EdgeParentOf {
				continue
			}
			if le.Edge.To == goal {
				return true
			}
			if !seen[le.Edge.To] {
				seen[le.Edge.To] = true
				frontier = append(frontier, le.Edge.To)
			}
		}
	}
	return false
}

// IdentityEnsure creates the identity node of sub if it does not exist yet.
func (tx *Tx) IdentityEnsure(tenant, sub string) error {
	id := IdentityID(sub)
	ok, err := tx.NodeExists(tenant, id)
	if err != nil || ok {
		return err
	}
	n := &records.Node{
		Tenant: tenant, ID: id, Type: IdentityType, Title: sub, Status: records.StatusOpen,
		Labels: []string{}, Props: map[string]any{}, Usage: map[string]float64{},
		UsageTotal: map[string]float64{}, OnChildFail: "fail", CreatedBy: sub,
	}
	return tx.NodeInsert(n, sub)
}
