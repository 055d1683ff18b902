package graphstore

import "github.com/tether-run/tether/internal/records"

// changeSet is what one successful write transaction changed of the
// in-memory state. The derived state (the table with its list marks and
// finished queues, the ready mirror, the queue meter's observations) is
// folded from it alone (table.fold), never from the transaction: a write
// transaction only fills its own maps (Tx.mut, Tx.edges, Tx.fences), and
// Tx.apply hands them over once it has succeeded. The maps are the
// transaction's own, lent (txMaps), so building a change set copies nothing.
type changeSet struct {
	now    int64                  // the transaction's instant, unix ns
	nodes  map[nodeRef]*nodeState // nodes changed; nil: removed
	edges  map[edgeRef]*liveEdge  // live edges added; nil: retired
	fences map[nodeRef]uint64     // last fences of the nodes removed
	events []records.Event        // the events appended, for queue outcomes
}

func (cs *changeSet) empty() bool {
	return len(cs.nodes) == 0 && len(cs.edges) == 0 && len(cs.fences) == 0
}

// fold applies cs to the table and the ready mirror, on the writer, under
// both their locks (entries in the mirror's trees change state only under
// its lock: trackLocked). It stamps each changed node's since, and returns
// the count moves the mirror shows once cs is durable (showCounts) and,
// with observe, the queue observations for the meter (queue_meter.go).
func (t *table) fold(cs *changeSet, ready *readyMirror, observe bool) (moves []countMove, obs []QueueObservation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ready.mu.Lock()
	defer ready.mu.Unlock()
	for ref, st := range cs.nodes {
		e, had := t.nodes.get(ref)
		var old *nodeState
		if had {
			o := e.st
			old = &o
		}
		if st != nil {
			st.since = sinceOf(old, st, cs.now)
		}
		if observe {
			obs = appendMoves(obs, ref, old, st, cs.now)
		}
		switch {
		case st == nil && had:
			t.mark(e, false)
			t.nodes.delete(ref)
			ready.trackLocked(e, true, nil, &moves)
		case st == nil:
		case had:
			if listKeyOf(&e.st) != listKeyOf(st) {
				t.mark(e, false)
			}
			ready.trackLocked(e, true, st, &moves) // sets e.st
		default:
			e = &nodeEntry{ref: ref}
			t.nodes.set(ref, e)
			t.mark(e, true)
			ready.trackLocked(e, false, st, &moves) // sets e.st
		}
		t.noteFinished(ref, old, st)
	}
	if observe {
		obs = t.appendOutcomes(obs, cs.events)
	}
	for ref, f := range cs.fences {
		t.fences[ref] = f
	}
	for ref, le := range cs.edges {
		t.foldEdge(ref, le)
	}
	return moves, obs
}

// foldEdge files a live edge added (le) or retired (nil) in both its ends.
func (t *table) foldEdge(ref edgeRef, le *liveEdge) {
	from, _ := t.nodes.get(nodeRef{ref.tenant, ref.from})
	to, _ := t.nodes.get(nodeRef{ref.tenant, ref.to})
	if le == nil {
		if from != nil && from.edges != nil {
			delete(from.edges.out, edgeSlot{ref.typ, ref.to})
			from.dropEdgesIfNone()
		}
		if to != nil && to.edges != nil {
			delete(to.edges.in, edgeSlot{ref.typ, ref.from})
			to.dropEdgesIfNone()
		}
		return
	}
	if from != nil {
		from.addOut(edgeSlot{ref.typ, ref.to}, le)
	}
	if to != nil {
		to.addIn(edgeSlot{ref.typ, ref.from}, le)
	}
}
