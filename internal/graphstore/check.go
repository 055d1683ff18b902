package graphstore

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// CheckReport is what Check found in a data directory.
type CheckReport struct {
	Format       int
	Nodes        int
	LiveEdges    int
	RetiredEdges int
	EventGroups  int
	Events       int
	Ready        int
	// ForeignRecords counts the records other packages own (format 5 on).
	ForeignRecords int
	Problems       []string
}

// maxProblems bounds the problems a report lists (the count goes on).
const maxProblems = 100

func (r *CheckReport) problem(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	} else if len(r.Problems) == maxProblems {
		r.Problems = append(r.Problems, "... (more problems not listed)")
	}
}

// Check verifies the records of the store in dir against each other: every
// record decodes under its key; both ends of each live edge exist and a
// node's parent field matches its parent_of edge; a running node holds a
// lease whose fence is its last fence, with a live assigned edge carrying
// that fence; a deleted node's kept fence is not above a node re-created
// under its id; each retired edge has both sides; every event group holds
// strictly increasing seqs ending at its key, every per-node pointer names a
// group with an event of that node and every such event has its pointer;
// each live edge's seq is an edge_added event; and the blocker counts and the
// ready set, derived the way the server derives them at open, agree with a
// recount from the edges; every blob a node names has its record; every
// record another package owns is one MessagePack map (format 5 on). The
// server must not be running on dir.
func Check(dir string) (*CheckReport, error) {
	if entries, err := os.ReadDir(dir); err != nil {
		return nil, err
	} else if len(entries) == 0 {
		return nil, fmt.Errorf("%s holds no store", dir)
	}
	db, err := kv.Open(kv.Options{Dir: dir})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	s := &Store{kv: db, clock: clock.Real{}, table: indexes.NewTable(), blobs: newBlobTable(), ready: indexes.NewReadyMirror(clock.Real{}), events: newEventHub(), flow: newFlowState(), lapses: newLapses()}
	defer s.ready.Close()
	stored, err := s.checkFormat(dir)
	if err != nil {
		return nil, err
	}
	r := &CheckReport{Format: stored.Version}
	if stored.Version == 0 {
		return r, nil
	}
	return r, s.checkRecords(r)
}

// checkRecords derives the state afresh into s (whose derived parts are
// empty) and checks the records against each other and that state against
// a recount from them; then each of served, an open store's derived state,
// against the same recount.
func (s *Store) checkRecords(r *CheckReport, served ...*Store) error {
	if err := s.derive(s.table, s.ready, s.blobs); err != nil {
		r.problem("the in-memory state cannot be derived: %v", err)
		return nil
	}
	s.marks = newMarks()
	if err := s.loadMarks(); err != nil {
		r.problem("%v", err)
		return nil
	}
	return s.kv.View(func(tx *kv.Txn) error {
		c := &checker{r: r, tx: tx, nodes: map[indexes.NodeRef]*records.Node{}, edgeAdded: map[string]map[uint64]string{}, marks: s.marks}
		for _, step := range []func() error{c.nodes_, c.edges, c.ends, c.retired, c.fences, c.events, c.leases, c.blobs, c.foreignRecords} {
			if err := step(); err != nil {
				return err
			}
		}
		c.readiness(s)
		for _, o := range served {
			first := len(r.Problems)
			c.readiness(o)
			if n := o.table.Nodes.Len(); n != len(c.nodes) {
				r.problem("the derived state holds %d nodes, the records %d", n, len(c.nodes))
			}
			for i := first; i < len(r.Problems); i++ {
				r.Problems[i] = "served state: " + r.Problems[i]
			}
		}
		return nil
	})
}

type checker struct {
	r         *CheckReport
	tx        *kv.Txn
	nodes     map[indexes.NodeRef]*records.Node
	live      []records.LiveEdgeRecord
	liveTen   []string
	edgeAdded map[string]map[uint64]string // tenant -> seq -> "from type to"
	marks     *marks
	// pointers are the event pointers at the end of node records.
	pointers []recordPointer
}

type recordPointer struct {
	ref indexes.NodeRef
	seq uint64
}

// horizon is the highest event seq retention removed from tenant.
func (c *checker) horizon(tenant string) uint64 { return c.marks.horizon[tenant] }

func (c *checker) nodes_() error {
	return c.tx.Scan([]byte{records.TagNode, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := records.SplitKey(key, 2)
		var n records.Node
		rest, err := n.UnmarshalMsg(val)
		if err != nil || len(parts) != 2 {
			c.r.problem("node record %q does not decode: %v", key, err)
			return true, nil
		}
		if tuple, _ := recordPointers(val); len(val)-len(rest) != tuple {
			c.r.problem("node record %q holds %d bytes after its fields that are not event pointers", key, len(rest))
		}
		var prev uint64
		eachRecordPointer(val, func(seq uint64) {
			if seq <= prev {
				c.r.problem("node record %q points at event group %d after %d", key, seq, prev)
			}
			prev = seq
			c.pointers = append(c.pointers, recordPointer{indexes.NodeRef{Tenant: n.Tenant, ID: n.ID}, seq})
		})
		if string(parts[0]) != n.Tenant || string(parts[1]) != n.ID {
			c.r.problem("node record under %q names %s/%s", key, n.Tenant, n.ID)
		}
		if !n.Status.Valid() {
			c.r.problem("node %s/%s has status %q", n.Tenant, n.ID, n.Status)
		}
		c.nodes[indexes.NodeRef{Tenant: n.Tenant, ID: n.ID}] = &n
		if a := n.Assigned; a != nil {
			if a.Edge.From != n.ID || a.Edge.Type != EdgeAssigned || a.Edge.RetiredAt != nil {
				c.r.problem("node %s/%s holds a live assigned edge %s %s %s", n.Tenant, n.ID, a.Edge.From, a.Edge.Type, a.Edge.To)
			}
			c.live = append(c.live, *a)
			c.liveTen = append(c.liveTen, n.Tenant)
			c.r.LiveEdges++
		}
		c.r.Nodes++
		return true, nil
	})
}

// ends checks that both ends of every live edge (stored, or kept in a node
// record) exist.
func (c *checker) ends() error {
	for i, le := range c.live {
		for _, id := range []string{le.Edge.From, le.Edge.To} {
			if c.nodes[indexes.NodeRef{Tenant: c.liveTen[i], ID: id}] == nil {
				c.r.problem("live edge %s %s %s of %s: node %s does not exist", le.Edge.From, le.Edge.Type, le.Edge.To, c.liveTen[i], id)
			}
		}
	}
	return nil
}

func (c *checker) edges() error {
	return c.tx.Scan([]byte{records.TagEdge, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := records.SplitKey(key, 4)
		var le records.LiveEdgeRecord
		if err := decode(val, &le, key); err != nil || len(parts) != 4 {
			c.r.problem("live edge record %q does not decode: %v", key, err)
			return true, nil
		}
		tenant, e := string(parts[0]), &le.Edge
		if string(parts[1]) != e.From || string(parts[2]) != e.Type || string(parts[3]) != e.To {
			c.r.problem("live edge under %q names %s %s %s", key, e.From, e.Type, e.To)
		}
		if e.RetiredAt != nil {
			c.r.problem("live edge %s %s %s of %s has retired_at", e.From, e.Type, e.To, tenant)
		}
		c.live = append(c.live, le)
		c.liveTen = append(c.liveTen, tenant)
		c.r.LiveEdges++
		return true, nil
	})
}

func (c *checker) retired() error {
	out := map[string]bool{}
	err := c.tx.Scan([]byte{records.TagRetiredOut, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := records.SplitKey(key, 5)
		var e records.Edge
		if err := decode(val, &e, key); err != nil || len(parts) != 5 || len(parts[4]) != 8 {
			c.r.problem("retired edge record %q does not decode: %v", key, err)
			return true, nil
		}
		if e.RetiredAt == nil {
			c.r.problem("retired edge %s %s %s has no retired_at", e.From, e.Type, e.To)
		}
		out[string(records.RetiredEdgeKey(records.TagRetiredIn, string(parts[0]), e.To, e.Type, e.From, records.Uint64FromBytes(parts[4])))] = false
		c.r.RetiredEdges++
		return true, nil
	})
	if err != nil {
		return err
	}
	err = c.tx.Scan([]byte{records.TagRetiredIn, records.KeySeparator}, nil, false, false, func(key, _ []byte) (bool, error) {
		if _, ok := out[string(key)]; !ok {
			c.r.problem("retired edge entry %q has no record", key)
		} else {
			out[string(key)] = true
		}
		return true, nil
	})
	for k, seen := range out {
		if !seen {
			c.r.problem("retired edge %q has no incoming-side entry", k)
		}
	}
	return err
}

// blobs checks that every blob a node names has its record (a named blob
// is never collected).
func (c *checker) blobs() error {
	for ref, n := range c.nodes {
		for _, sha := range n.Blobs {
			ok, err := c.tx.Has(records.BlobKey(ref.Tenant, sha))
			if err != nil {
				return err
			}
			if !ok {
				c.r.problem("node %s/%s names blob %s, which has no record", ref.Tenant, ref.ID, sha)
			}
		}
	}
	return nil
}

func (c *checker) fences() error {
	return c.tx.Scan([]byte{records.TagFence, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := records.SplitKey(key, 2)
		if len(parts) != 2 || len(val) != 8 {
			c.r.problem("fence record %q is malformed", key)
			return true, nil
		}
		if n := c.nodes[indexes.NodeRef{Tenant: string(parts[0]), ID: string(parts[1])}]; n != nil && n.LastFence < records.Uint64FromBytes(val) {
			c.r.problem("node %s/%s was re-created with last fence %d below its deleted predecessor's %d", n.Tenant, n.ID, n.LastFence, records.Uint64FromBytes(val))
		}
		return true, nil
	})
}

func (c *checker) events() error {
	last := map[string]uint64{}
	groups := map[string]map[uint64]map[string]bool{} // tenant -> group -> node ids
	err := c.tx.Scan([]byte{records.TagEvent, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
		parts := records.SplitKey(key, 2)
		var g records.EventGroup
		if err := decode(val, &g, key); err != nil || len(parts) != 2 || len(parts[1]) != 8 || len(g.Events) == 0 {
			c.r.problem("event group %q does not decode: %v", key, err)
			return true, nil
		}
		tenant, at := string(parts[0]), records.Uint64FromBytes(parts[1])
		if h := c.horizon(tenant); g.Events[0].Seq <= h {
			c.r.problem("event group %d of %s holds seq %d, behind its retention horizon %d", at, tenant, g.Events[0].Seq, h)
		}
		if g.Events[len(g.Events)-1].Seq != at {
			c.r.problem("event group %d of %s ends at seq %d", at, tenant, g.Events[len(g.Events)-1].Seq)
		}
		if groups[tenant] == nil {
			groups[tenant] = map[uint64]map[string]bool{}
			c.edgeAdded[tenant] = map[uint64]string{}
		}
		ids := map[string]bool{}
		for _, ev := range g.Events {
			if ev.Seq <= last[tenant] {
				c.r.problem("event seq %d of %s does not follow %d", ev.Seq, tenant, last[tenant])
			}
			last[tenant] = ev.Seq
			if ev.NodeID != "" {
				ids[ev.NodeID] = true
			}
			if ev.Type == records.EventEdgeAdded {
				c.edgeAdded[tenant][ev.Seq] = fmt.Sprint(ev.Data.Get("from"), " ", ev.Data.Get("type"), " ", ev.Data.Get("to"))
			}
			c.r.Events++
		}
		groups[tenant][at] = ids
		c.r.EventGroups++
		return true, nil
	})
	if err != nil {
		return err
	}
	pointed := map[string]bool{}
	err = c.tx.Scan([]byte{records.TagNodeEvent, records.KeySeparator}, nil, false, false, func(key, _ []byte) (bool, error) {
		parts := records.SplitKey(key, 3)
		if len(parts) != 3 || len(parts[2]) != 8 {
			c.r.problem("node event pointer %q is malformed", key)
			return true, nil
		}
		tenant, id, at := string(parts[0]), string(parts[1]), records.Uint64FromBytes(parts[2])
		if ids, ok := groups[tenant][at]; !ok || !ids[id] {
			c.r.problem("node %s/%s points at event group %d, which has no event of it", tenant, id, at)
		}
		pointed[fmt.Sprint(tenant, "\x00", id, "\x00", at)] = true
		return true, nil
	})
	for _, p := range c.pointers {
		if ids, ok := groups[p.ref.Tenant][p.seq]; !ok || !ids[p.ref.ID] {
			if !ok && p.seq <= c.horizon(p.ref.Tenant) {
				continue // retention removed the group; a full record drops such pointers to make room
			}
			c.r.problem("node %s/%s points at event group %d from its record, which has no event of it", p.ref.Tenant, p.ref.ID, p.seq)
		}
		pointed[fmt.Sprint(p.ref.Tenant, "\x00", p.ref.ID, "\x00", p.seq)] = true
	}
	for tenant, gs := range groups {
		for at, ids := range gs {
			for id := range ids {
				if !pointed[fmt.Sprint(tenant, "\x00", id, "\x00", at)] {
					c.r.problem("event group %d of %s has an event of %s with no pointer from it", at, tenant, id)
				}
			}
		}
	}
	for i, le := range c.live {
		e := le.Edge
		if le.Seq <= c.horizon(c.liveTen[i]) {
			continue // its edge_added event is past retention
		}
		if got, ok := c.edgeAdded[c.liveTen[i]][le.Seq]; !ok || got != e.From+" "+e.Type+" "+e.To {
			c.r.problem("live edge %s %s %s of %s: seq %d is not its edge_added event", e.From, e.Type, e.To, c.liveTen[i], le.Seq)
		}
	}
	return err
}

// leases checks running nodes, their fences and assigned edges, and parents.
func (c *checker) leases() error {
	assigned := map[indexes.NodeRef]*records.Edge{}
	parentOf := map[indexes.NodeRef]string{}
	for i, le := range c.live {
		e := le.Edge
		switch e.Type {
		case EdgeAssigned:
			if n := c.nodes[indexes.NodeRef{Tenant: c.liveTen[i], ID: e.From}]; n != nil && n.Lease != nil && e.To == IdentityID(n.Lease.By) {
				assigned[indexes.NodeRef{Tenant: c.liveTen[i], ID: e.From}] = &le.Edge
			}
		case EdgeParentOf:
			parentOf[indexes.NodeRef{Tenant: c.liveTen[i], ID: e.To}] = e.From
		}
	}
	for ref, n := range c.nodes {
		if (n.Status == records.StatusRunning) != (n.Lease != nil) {
			c.r.problem("node %s/%s is %s with lease %v", ref.Tenant, ref.ID, n.Status, n.Lease != nil)
		}
		if n.Lease != nil {
			if n.Lease.Fence != n.LastFence {
				c.r.problem("node %s/%s: lease fence %d is not its last fence %d", ref.Tenant, ref.ID, n.Lease.Fence, n.LastFence)
			}
			e := assigned[ref]
			if e == nil {
				c.r.problem("node %s/%s is leased by %s with no live assigned edge", ref.Tenant, ref.ID, n.Lease.By)
			} else if f, ok := e.Props["fence"]; !ok || fmt.Sprint(f) != fmt.Sprint(n.Lease.Fence) {
				c.r.problem("node %s/%s: assigned edge fence %v is not the lease's %d", ref.Tenant, ref.ID, f, n.Lease.Fence)
			}
		}
		if p := parentOf[ref]; p != n.Parent {
			c.r.problem("node %s/%s has parent %q, its parent_of edge says %q", ref.Tenant, ref.ID, n.Parent, p)
		}
	}
	return nil
}

// readiness recounts blockers from the edges and compares them, and the
// ready set, with what the server derives.
func (c *checker) readiness(s *Store) {
	deps, children, dependents := map[indexes.NodeRef]int64{}, map[indexes.NodeRef]int64{}, map[indexes.NodeRef]int64{}
	for i, le := range c.live {
		e, tenant := le.Edge, c.liveTen[i]
		to := c.nodes[indexes.NodeRef{Tenant: tenant, ID: e.To}]
		if to == nil {
			continue
		}
		switch e.Type {
		case EdgeDependsOn:
			dependents[indexes.NodeRef{Tenant: tenant, ID: e.To}]++
			if !DependencySatisfied(to.Status, &e) {
				deps[indexes.NodeRef{Tenant: tenant, ID: e.From}]++
			}
		case EdgeParentOf:
			if !to.Status.Terminal() {
				children[indexes.NodeRef{Tenant: tenant, ID: e.From}]++
			}
		}
	}
	readyByQueue := map[indexes.TenantQueue][]string{}
	for ref, n := range c.nodes {
		e, _ := s.table.Nodes.Get(ref)
		if e == nil {
			c.r.problem("node %s/%s is missing from the derived state", ref.Tenant, ref.ID)
			continue
		}
		if int64(e.State.Deps) != deps[ref] || int64(e.State.Children) != children[ref] || int64(e.State.Dependents) != dependents[ref] {
			c.r.problem("node %s/%s: derived blockers %d/%d/%d, recounted %d/%d/%d", ref.Tenant, ref.ID,
				e.State.Deps, e.State.Children, e.State.Dependents, deps[ref], children[ref], dependents[ref])
		}
		if n.Status == records.StatusQueued && n.Queue != "" && deps[ref] == 0 && children[ref] == 0 {
			tq := indexes.TenantQueue{Tenant: ref.Tenant, Queue: n.Queue}
			readyByQueue[tq] = append(readyByQueue[tq], ref.ID)
			c.r.Ready++
		}
	}
	derived := s.ready.ReadySets()
	for tq := range derived {
		if _, ok := readyByQueue[tq]; !ok {
			readyByQueue[tq] = nil
		}
	}
	for tq, want := range readyByQueue {
		got := derived[tq]
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			c.r.problem("queue %s of %s: ready set recounted [%s], derived [%s]", tq.Queue, tq.Tenant, strings.Join(head(want), " "), strings.Join(head(got), " "))
		}
	}
}

func head(ids []string) []string {
	if len(ids) > 10 {
		return append(slices.Clone(ids[:10]), "...")
	}
	return ids
}
