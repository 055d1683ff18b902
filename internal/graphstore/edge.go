package graphstore

import (
	"regexp"
	"strings"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/records"
)

// System edge types.
const (
	EdgeDependsOn = "depends_on" // from waits for to
	EdgeParentOf  = "parent_of"  // from is the parent of to
	EdgeAssigned  = "assigned"   // work node -> identity node; system-managed
)

// IdentityPrefix starts the id of every identity node.
const IdentityPrefix = "identity:"

// IdentityType is the type of identity nodes.
const IdentityType = "identity"

// IdentityID is the node id of the identity sub.
func IdentityID(sub string) string { return IdentityPrefix + sub }

// IsIdentityID reports whether id names an identity node.
func IsIdentityID(id string) bool { return strings.HasPrefix(id, IdentityPrefix) }

var edgeTypePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// ValidEdgeType reports whether t is a well-formed edge type.
func ValidEdgeType(t string) bool { return edgeTypePattern.MatchString(t) }

// liveEdge returns the live edge (from, typ, to) as this transaction sees
// the in-memory state, or nil.
func (tx *Tx) liveEdge(tenant, from, typ, to string) *indexes.LiveEdge {
	if le, ok := tx.edges[indexes.EdgeRef{Tenant: tenant, From: from, Type: typ, To: to}]; ok {
		return le
	}
	t := tx.store.table
	if !tx.writable {
		t.Mu.RLock()
		defer t.Mu.RUnlock()
	}
	e, ok := t.Nodes.Get(indexes.NodeRef{Tenant: tenant, ID: from})
	if !ok {
		return nil
	}
	return e.OutEdges()[indexes.EdgeSlot{Type: typ, Peer: to}]
}

// EdgeGet returns the live edge (from, typ, to) or a fault.NotFound. In a
// View it is read from the store, so only a durable edge is found.
func (tx *Tx) EdgeGet(tenant, from, typ, to string) (*records.Edge, error) {
	e, err := tx.EdgeFind(tenant, from, typ, to)
	if err == nil && e == nil {
		return nil, edgeNotFound(from, typ, to)
	}
	return e, err
}

// EdgeFind is EdgeGet answering nil, nil when there is no such live edge:
// a claim looks for a lingering assigned edge that is almost never there.
func (tx *Tx) EdgeFind(tenant, from, typ, to string) (*records.Edge, error) {
	if tx.writable {
		le := tx.liveEdge(tenant, from, typ, to)
		if le == nil {
			return nil, nil
		}
		return le.Edge.Clone(), nil
	}
	r, err := tx.storedLiveEdge(tenant, from, typ, to)
	if err != nil || r == nil {
		return nil, err
	}
	return &r.Edge, nil
}

// RunEdge returns the live assigned edge from n to the identity of sub, or
// nil: the edge of the run n's lease stands for, for the caller to retire.
// n is a node this transaction read and owns. On the writer, when n's record
// holds that live edge (the record keeps its node's assigned edge), the
// answer is n's own decoded copy, and no copy of the store's edge is made;
// otherwise it is EdgeFind's.
func (tx *Tx) RunEdge(n *records.Node, sub string) (*records.Edge, error) {
	if a := n.Assigned; tx.writable && a != nil && isIdentityOf(a.Edge.To, sub) {
		// The same seq makes it the same edge: seqs are never reused.
		if le := tx.liveEdge(n.Tenant, n.ID, EdgeAssigned, a.Edge.To); le != nil && le.Seq == a.Seq {
			return &a.Edge, nil
		}
	}
	return tx.EdgeFind(n.Tenant, n.ID, EdgeAssigned, IdentityID(sub))
}

// isIdentityOf reports whether id is IdentityID(sub), without building it.
func isIdentityOf(id, sub string) bool {
	return len(id) == len(IdentityPrefix)+len(sub) && strings.HasPrefix(id, IdentityPrefix) && id[len(IdentityPrefix):] == sub
}

// edgeNotFound is EdgeGet's refusal.
func edgeNotFound(from, typ, to string) error {
	return &fault.NotFound{What: "edge", ID: from + " " + typ + " " + to}
}

// storeLiveEdge writes a live edge (r.Seq > 0) or its removal (r.Seq == 0).
// An assigned edge lives in its node's record (Node.Assigned): the change
// is noted here and written with the record (putNode, or finish when the
// transaction did not write the node after it).
func (tx *Tx) storeLiveEdge(tenant string, r *records.LiveEdgeRecord) error {
	e := &r.Edge
	if e.Type != EdgeAssigned {
		if r.Seq == 0 {
			return tx.kv.Delete(records.LiveEdgeKey(tenant, e.From, e.Type, e.To))
		}
		return tx.setRecord(records.LiveEdgeKey(tenant, e.From, e.Type, e.To), r)
	}
	if tx.assigned == nil {
		tx.assigned = map[indexes.NodeRef]assignedChange{}
	}
	if r.Seq == 0 {
		r = nil
	}
	tx.assigned[indexes.NodeRef{Tenant: tenant, ID: e.From}] = assignedChange{rec: r}
	return nil
}

// assignedChange is an assigned edge added (rec) or retired (nil) in a
// transaction, and whether its node's record was written since (written).
type assignedChange struct {
	rec     *records.LiveEdgeRecord
	written bool
}

// storedLiveEdge reads a live edge from the store (nil when there is none).
func (tx *Tx) storedLiveEdge(tenant, from, typ, to string) (*records.LiveEdgeRecord, error) {
	if typ == EdgeAssigned {
		n, err := tx.NodeGet(tenant, from)
		if _, gone := err.(*fault.NotFound); gone {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if n.Assigned == nil || n.Assigned.Edge.To != to {
			return nil, nil
		}
		return n.Assigned, nil
	}
	var r records.LiveEdgeRecord
	ok, err := tx.getRecord(records.LiveEdgeKey(tenant, from, typ, to), &r)
	if err != nil || !ok {
		return nil, err
	}
	return &r, nil
}

// EdgeInsert stores a new live edge and its edge_added event. Both nodes must
// exist; a live edge with the same (from, type, to) is a fault.AlreadyExists;
// a depends_on or parent_of edge that closes a cycle is a fault.Cycle. The
// caller keeps node fields that mirror edges (Parent) in step.
func (tx *Tx) EdgeInsert(tenant string, e *records.Edge) error {
	return tx.edgeInsert(tenant, e, false)
}

// EdgeInsertKnownNodes is EdgeInsert for a caller that has just read both
// nodes in this transaction and built e for this call (a claim writing its
// assigned edge): it skips the existence checks, and the store keeps e
// itself rather than a copy, so the caller may read e afterwards but never
// change it (the store never changes a live edge in place either).
func (tx *Tx) EdgeInsertKnownNodes(tenant string, e *records.Edge) error {
	return tx.edgeInsert(tenant, e, true)
}

// edgeInsert is EdgeInsert; known is EdgeInsertKnownNodes's case.
func (tx *Tx) edgeInsert(tenant string, e *records.Edge, known bool) error {
	if !tx.writable {
		return errReadOnly
	}
	for _, id := range []string{e.From, e.To} {
		if known {
			break
		}
		if tx.state(indexes.NodeRef{Tenant: tenant, ID: id}) == nil {
			return &fault.NotFound{What: "node", ID: id}
		}
	}
	if tx.liveEdge(tenant, e.From, e.Type, e.To) != nil {
		return &fault.AlreadyExists{What: "edge", ID: e.From + " " + e.Type + " " + e.To}
	}
	if e.Type == EdgeDependsOn || e.Type == EdgeParentOf {
		if tx.reaches(tenant, e.To, e.From) {
			return &fault.Cycle{From: e.From, Type: e.Type, To: e.To}
		}
	}
	if e.Props == nil {
		e.Props = map[string]any{}
	}
	e.CreatedAt = tx.now.UTC()
	e.RetiredAt = nil
	seq, err := tx.nextSeq(tenant)
	if err != nil {
		return err
	}
	if err := tx.storeLiveEdge(tenant, &records.LiveEdgeRecord{Edge: *e, Seq: seq}); err != nil {
		return err
	}
	kept := e
	if !known {
		kept = e.Clone()
	}
	tx.setEdge(indexes.EdgeRef{Tenant: tenant, From: e.From, Type: e.Type, To: e.To}, &indexes.LiveEdge{Edge: kept, Seq: seq})
	if dDeps, dChildren := tx.edgeBlocks(tenant, e); dDeps != 0 || dChildren != 0 {
		tx.addBlockers(tenant, e.From, dDeps, dChildren)
	}
	if e.Type == EdgeDependsOn {
		if st := tx.mut(indexes.NodeRef{Tenant: tenant, ID: e.To}); st != nil {
			st.Dependents++
		}
	}
	return tx.emitWithSeq(tenant, seq, records.EventEdgeAdded, e.From, e.CreatedBy, records.Data().Str("from", e.From).Str("type", e.Type).Str("to", e.To).Done())
}

func (tx *Tx) setEdge(ref indexes.EdgeRef, le *indexes.LiveEdge) {
	if tx.edges == nil {
		tx.edges = map[indexes.EdgeRef]*indexes.LiveEdge{}
	}
	tx.edges[ref] = le
}

// EdgeRetire moves a live edge to history with retired_at = now, merging
// extraProps into its props, and emits edge_retired. extraProps becomes the
// edge's props when it had none: the caller gives it up.
func (tx *Tx) EdgeRetire(tenant string, e *records.Edge, by string, extraProps map[string]any) error {
	if !tx.writable {
		return errReadOnly
	}
	le := tx.liveEdge(tenant, e.From, e.Type, e.To)
	if le == nil {
		return &fault.NotFound{What: "edge", ID: e.From + " " + e.Type + " " + e.To}
	}
	if dDeps, dChildren := tx.edgeBlocks(tenant, e); dDeps != 0 || dChildren != 0 {
		tx.addBlockers(tenant, e.From, -dDeps, -dChildren)
	}
	if e.Type == EdgeDependsOn {
		if st := tx.mut(indexes.NodeRef{Tenant: tenant, ID: e.To}); st != nil {
			st.Dependents = max(0, st.Dependents-1)
		}
	}
	if err := tx.storeLiveEdge(tenant, &records.LiveEdgeRecord{Edge: records.Edge{From: e.From, Type: e.Type, To: e.To}}); err != nil {
		return err
	}
	tx.setEdge(indexes.EdgeRef{Tenant: tenant, From: e.From, Type: e.Type, To: e.To}, nil)
	now := tx.now.UTC()
	e.RetiredAt = &now
	switch {
	case len(e.Props) == 0 && extraProps != nil:
		e.Props = extraProps // the caller's map is the edge's from now on
	case e.Props == nil:
		e.Props = map[string]any{}
	default:
		for k, v := range extraProps {
			e.Props[k] = v
		}
	}
	if err := tx.setRecord(tx.scratchKey(records.TagRetiredOut, tenant).Str(e.From).Str(e.Type).Str(e.To).U64(le.Seq).Bytes(), e); err != nil {
		return err
	}
	if err := tx.kv.Set(tx.scratchKey(records.TagRetiredIn, tenant).Str(e.To).Str(e.Type).Str(e.From).U64(le.Seq).Bytes(), nil); err != nil {
		return err
	}
	data := records.Data().Str("from", e.From).Str("type", e.Type).Str("to", e.To)
	if o, ok := e.Props["outcome"]; ok {
		switch o := o.(type) {
		case nil:
			data = data.Null("outcome")
		case string:
			data = data.Str("outcome", o)
		default: // a user's edge may hold any value there
			m := data.Done().Map() // decoded afresh: the event's own
			m["outcome"] = o
			return tx.Emit(tenant, records.EventEdgeRetired, e.From, by, m)
		}
	}
	return tx.EmitData(tenant, records.EventEdgeRetired, e.From, by, data.Done())
}
