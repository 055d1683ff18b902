package graphstore

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// rebuild derives the in-memory state from the records: every node's state
// (and its record while live), the live edges (assigned ones from their
// nodes' records) with the blocker and dependent counts they imply, the
// fences of deleted nodes, the blobs with the references the nodes make, the
// ready mirror with its queue counts, the finished nodes in the order
// retention takes them, and the retention marks. It runs once at open,
// before the writer.
func (s *Store) rebuild() error {
	if err := s.derive(s.table, s.ready); err != nil {
		return err
	}
	s.table.fillFinished()
	return s.loadMarks()
}

// loadMarks reads every tenant's retention mark (retention.go).
func (s *Store) loadMarks() error {
	return s.kv.View(func(ktx *kv.Txn) error {
		return ktx.Scan([]byte{records.TagRetention, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
			parts := records.SplitKey(key, 2) // tenant, ""
			m, err := decodeMark(val)
			if len(parts) != 2 || err != nil {
				return false, fmt.Errorf("retention mark %q is malformed: %v", key, err)
			}
			tenant := string(parts[0])
			s.marks.writer[tenant], s.marks.horizon[tenant] = m, m.horizon
			return true, nil
		})
	})
}

// derive builds the in-memory state from the records into t and m, both
// empty (it makes t's node map anew, at its final size).
func (s *Store) derive(t *table, m *readyMirror) error {
	type assignedEdge struct {
		tenant string
		r      *records.LiveEdgeRecord
	}
	var assigned []assignedEdge
	blobRefs := map[blobRef]int64{}
	return s.kv.View(func(ktx *kv.Txn) error {
		// The entries in key order, which is mostly list order already
		// (ids made by the server grow with time): the sort below then has
		// little to do, where the map's random order cost it a second at a
		// million nodes.
		var entries []*nodeEntry
		err := scanNodes(ktx, func(ref nodeRef, n *records.Node, val []byte) {
			e := &nodeEntry{ref: ref, st: stateOf(n, val, s.liveRecords)}
			e.listedOrder = e.st.order
			entries = append(entries, e)
			if n.Assigned != nil {
				assigned = append(assigned, assignedEdge{ref.tenant, n.Assigned})
			}
			for _, sha := range n.Blobs {
				blobRefs[blobRef{ref.tenant, sha}]++
			}
		})
		if err != nil {
			return err
		}
		// The table's map made at its final size: filled as the scan went,
		// it grew by doubling, and rehashing a million entries along the
		// way cost ~0.8 s of the start-up.
		t.nodes = newNodeIndex(len(entries))
		for _, e := range entries {
			t.nodes.set(e.ref, e)
		}
		for _, a := range assigned {
			t.addLive(a.tenant, a.r)
		}
		if err := t.blobs.derive(ktx, blobRefs); err != nil {
			return err
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
			t.addLive(string(parts[0]), &r)
			return true, nil
		})
		if err != nil {
			return err
		}
		err = ktx.Scan([]byte{records.TagFence, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
			parts := records.SplitKey(key, 2)
			if len(parts) == 2 && len(val) == 8 {
				t.fences[nodeRef{string(parts[0]), string(parts[1])}] = records.Uint64FromBytes(val)
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		// In list order: B-tree inserts in order touch one path, at random
		// they were most of the start-up time at a million nodes.
		slices.SortFunc(entries, func(a, b *nodeEntry) int {
			if c := compareEntry(a, b); c != 0 {
				return c
			}
			return strings.Compare(a.ref.tenant, b.ref.tenant)
		})
		// The lists and the ready mirror share nothing: they are built side
		// by side, on the two cores a small server has (the mirror's trees
		// on goroutines of their own: readyMirror.load).
		var wg sync.WaitGroup
		wg.Go(func() {
			for _, e := range entries {
				k := listKeyOf(&e.st)
				t.lists.tenant(e.ref.tenant).list(e, &k)
			}
		})
		moves := m.load(entries)
		wg.Wait()
		m.showCounts(moves)
		return nil
	})
}

// addLive puts a stored live edge into both of its nodes' maps and counts
// what it blocks (rebuild only; an edge whose node is missing is left for
// tether check to report).
func (t *table) addLive(tenant string, r *records.LiveEdgeRecord) {
	from, _ := t.nodes.get(nodeRef{tenant, r.Edge.From})
	to, _ := t.nodes.get(nodeRef{tenant, r.Edge.To})
	if from == nil || to == nil {
		return
	}
	le := &liveEdge{e: &r.Edge, seq: r.Seq}
	from.addOut(edgeSlot{r.Edge.Type, r.Edge.To}, le)
	to.addIn(edgeSlot{r.Edge.Type, r.Edge.From}, le)
	switch {
	case r.Edge.Type == EdgeDependsOn:
		to.st.dependents++
		if !DependencySatisfied(to.st.status.Status(), &r.Edge) {
			from.st.deps++
		}
	case r.Edge.Type == EdgeParentOf && !to.st.status.Terminal():
		from.st.children++
	}
}
