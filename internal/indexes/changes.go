package indexes

import "github.com/tether-run/tether/internal/records"

// ChangeSet is what one successful write transaction changed of the
// in-memory state. The derived state (the table with its list marks and
// finished queues, the ready mirror, the queue meter's observations) is
// folded from it alone (Table.Fold), never from the transaction: a write
// transaction only fills its own maps (graphstore's Tx.mut, Tx.edges, Tx.fences), and
// Tx.apply hands them over once it has succeeded. The maps are the
// transaction's own, lent (txMaps), so building a change set copies nothing.
type ChangeSet struct {
	Now    int64                  // the transaction's instant, unix ns
	Nodes  map[NodeRef]*NodeState // nodes changed; nil: removed
	Edges  map[EdgeRef]*LiveEdge  // live edges added; nil: retired
	Fences map[NodeRef]uint64     // last fences of the nodes removed
	Events []records.Event        // the events appended, for queue outcomes
}

func (cs *ChangeSet) Empty() bool {
	return len(cs.Nodes) == 0 && len(cs.Edges) == 0 && len(cs.Fences) == 0
}

// Fold applies cs to the table and the ready mirror, on the writer, under
// both their locks (entries in the mirror's trees change state only under
// its lock: trackLocked). It stamps each changed node's since, and returns
// the count moves the mirror shows once cs is durable (showCounts) and,
// with observe, the queue observations for the meter (queue_meter.go).
func (t *Table) Fold(cs *ChangeSet, ready *ReadyMirror, observe bool) (moves []countMove, obs []QueueObservation) {
	t.Mu.Lock()
	defer t.Mu.Unlock()
	ready.mu.Lock()
	defer ready.mu.Unlock()
	for ref, st := range cs.Nodes {
		e, had := t.Nodes.Get(ref)
		var old *NodeState
		if had {
			o := e.State
			old = &o
		}
		if st != nil {
			st.since = sinceOf(old, st, cs.Now)
		}
		if observe {
			obs = appendMoves(obs, ref, old, st, cs.Now)
		}
		switch {
		case st == nil && had:
			t.mark(e, false)
			t.Nodes.delete(ref)
			ready.trackLocked(e, true, nil, &moves)
		case st == nil:
		case had:
			if listKeyOf(&e.State) != listKeyOf(st) {
				t.mark(e, false)
			}
			ready.trackLocked(e, true, st, &moves) // sets e.st
		default:
			e = &NodeEntry{Ref: ref}
			t.Nodes.set(ref, e)
			t.mark(e, true)
			ready.trackLocked(e, false, st, &moves) // sets e.st
		}
		t.noteFinished(ref, old, st)
	}
	if observe {
		obs = t.appendOutcomes(obs, cs.Events)
	}
	for ref, f := range cs.Fences {
		t.Fences[ref] = f
	}
	for ref, le := range cs.Edges {
		t.foldEdge(ref, le)
	}
	return moves, obs
}

// foldEdge files a live edge added (le) or retired (nil) in both its ends.
func (t *Table) foldEdge(ref EdgeRef, le *LiveEdge) {
	from, _ := t.Nodes.Get(NodeRef{ref.Tenant, ref.From})
	to, _ := t.Nodes.Get(NodeRef{ref.Tenant, ref.To})
	if le == nil {
		if from != nil && from.edges != nil {
			delete(from.edges.out, EdgeSlot{ref.Type, ref.To})
			from.dropEdgesIfNone()
		}
		if to != nil && to.edges != nil {
			delete(to.edges.in, EdgeSlot{ref.Type, ref.From})
			to.dropEdgesIfNone()
		}
		return
	}
	if from != nil {
		from.addOut(EdgeSlot{ref.Type, ref.To}, le)
	}
	if to != nil {
		to.addIn(EdgeSlot{ref.Type, ref.From}, le)
	}
}

// EdgeRef names a live edge.
type EdgeRef struct{ Tenant, From, Type, To string }
