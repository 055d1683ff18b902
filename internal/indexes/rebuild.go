package indexes

import (
	"slices"
	"strings"
	"sync"

	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// Derive builds the in-memory state from the records read through ktx into
// t and m, both empty (it makes t's node map anew, at its final size).
// onNode, when set, is called with every node record as it is scanned (n is
// reused for the next one); blocks counts, on the two ends of a live edge,
// what the edge blocks (the blockers are the model's: graphstore).
func Derive(ktx *kv.Txn, t *Table, m *ReadyMirror, liveRecords bool, onNode func(ref NodeRef, n *records.Node), blocks func(e *records.Edge, from, to *NodeState)) error {
	type assignedEdge struct {
		tenant string
		r      *records.LiveEdgeRecord
	}
	var assigned []assignedEdge
	// The entries in key order, which is mostly list order already
	// (ids made by the server grow with time): the sort below then has
	// little to do, where the map's random order cost it a second at a
	// million nodes.
	var entries []*NodeEntry
	err := scanNodes(ktx, func(ref NodeRef, n *records.Node, val []byte) {
		e := &NodeEntry{Ref: ref, State: StateOf(n, val, liveRecords)}
		e.listedOrder = e.State.order
		entries = append(entries, e)
		if n.Assigned != nil {
			assigned = append(assigned, assignedEdge{ref.Tenant, n.Assigned})
		}
		if onNode != nil {
			onNode(ref, n)
		}
	})
	if err != nil {
		return err
	}
	// The table's map made at its final size: filled as the scan went,
	// it grew by doubling, and rehashing a million entries along the
	// way cost ~0.8 s of the start-up.
	t.Nodes = newNodeIndex(len(entries))
	for _, e := range entries {
		t.Nodes.set(e.Ref, e)
	}
	for _, a := range assigned {
		t.addLive(a.tenant, a.r, blocks)
	}
	err = ktx.Scan([]byte{records.TagEdge, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := records.SplitKey(key, 4) // tenant, from, type, to
		if len(parts) != 4 {
			return true, nil
		}
		var r records.LiveEdgeRecord
		if err := decode(val, &r, key); err != nil {
			return false, err
		}
		t.addLive(string(parts[0]), &r, blocks)
		return true, nil
	})
	if err != nil {
		return err
	}
	err = ktx.Scan([]byte{records.TagFence, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := records.SplitKey(key, 2)
		if len(parts) == 2 && len(val) == 8 {
			t.Fences[NodeRef{string(parts[0]), string(parts[1])}] = records.Uint64FromBytes(val)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	// In list order: B-tree inserts in order touch one path, at random
	// they were most of the start-up time at a million nodes.
	slices.SortFunc(entries, func(a, b *NodeEntry) int {
		if c := compareEntry(a, b); c != 0 {
			return c
		}
		return strings.Compare(a.Ref.Tenant, b.Ref.Tenant)
	})
	// The lists and the ready mirror share nothing: they are built side
	// by side, on the two cores a small server has (the mirror's trees
	// on goroutines of their own: ReadyMirror.load).
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, e := range entries {
			k := listKeyOf(&e.State)
			t.lists.tenant(e.Ref.Tenant).list(e, &k)
		}
	})
	moves := m.load(entries)
	wg.Wait()
	m.ShowCounts(moves)
	return nil
}

// addLive puts a stored live edge into both of its nodes' maps and has
// blocks count what it blocks (rebuild only; an edge whose node is missing
// is left for tether check to report).
func (t *Table) addLive(tenant string, r *records.LiveEdgeRecord, blocks func(e *records.Edge, from, to *NodeState)) {
	from, _ := t.Nodes.Get(NodeRef{tenant, r.Edge.From})
	to, _ := t.Nodes.Get(NodeRef{tenant, r.Edge.To})
	if from == nil || to == nil {
		return
	}
	le := &LiveEdge{Edge: &r.Edge, Seq: r.Seq}
	from.addOut(EdgeSlot{r.Edge.Type, r.Edge.To}, le)
	to.addIn(EdgeSlot{r.Edge.Type, r.Edge.From}, le)
	blocks(&r.Edge, &from.State, &to.State)
}
