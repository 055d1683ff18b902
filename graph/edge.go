package graph

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/tether-run/tether/fault"
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

// Edge is a typed link between two nodes of one tenant.
type Edge struct {
	From      string         `json:"from"`
	Type      string         `json:"type"`
	To        string         `json:"to"`
	Props     map[string]any `json:"props"`
	CreatedBy string         `json:"created_by"`
	CreatedAt time.Time      `json:"created_at"`
	RetiredAt *time.Time     `json:"retired_at"`
}

// EdgeGet returns the live edge (from, typ, to) or a fault.NotFound.
func (tx *Tx) EdgeGet(tenant, from, typ, to string) (*Edge, error) {
	var e Edge
	ok, err := tx.getJSON(edgeKey(tagEdgeOut, tenant, from, typ, to), &e)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &fault.NotFound{What: "edge", ID: from + " " + typ + " " + to}
	}
	return &e, nil
}

// EdgeInsert stores a new live edge and its edge_added event. Both nodes must
// exist; a live edge with the same (from, type, to) is a fault.AlreadyExists;
// a depends_on or parent_of edge that closes a cycle is a fault.Cycle. The
// caller keeps node fields that mirror edges (Parent) in step.
func (tx *Tx) EdgeInsert(tenant string, e *Edge) error {
	return tx.edgeInsert(tenant, e, false)
}

// EdgeInsertKnownNodes is EdgeInsert for a caller that has just read both
// nodes in this transaction (a claim writing its assigned edge): it skips
// the existence checks.
func (tx *Tx) EdgeInsertKnownNodes(tenant string, e *Edge) error {
	return tx.edgeInsert(tenant, e, true)
}

func (tx *Tx) edgeInsert(tenant string, e *Edge, nodesKnown bool) error {
	for _, id := range []string{e.From, e.To} {
		if nodesKnown {
			break
		}
		ok, err := tx.NodeExists(tenant, id)
		if err != nil {
			return err
		}
		if !ok {
			return &fault.NotFound{What: "node", ID: id}
		}
	}
	out := edgeKey(tagEdgeOut, tenant, e.From, e.Type, e.To)
	exists, err := tx.exists(out)
	if err != nil {
		return err
	}
	if exists {
		return &fault.AlreadyExists{What: "edge", ID: e.From + " " + e.Type + " " + e.To}
	}
	if e.Type == EdgeDependsOn || e.Type == EdgeParentOf {
		cyclic, err := tx.reaches(tenant, e.To, e.From)
		if err != nil {
			return err
		}
		if cyclic {
			return &fault.Cycle{From: e.From, Type: e.Type, To: e.To}
		}
	}
	if e.Props == nil {
		e.Props = map[string]any{}
	}
	e.CreatedAt = tx.now.UTC()
	e.RetiredAt = nil
	rec, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := tx.set(out, rec); err != nil {
		return err
	}
	if err := tx.set(edgeKey(tagEdgeIn, tenant, e.To, e.Type, e.From), rec); err != nil {
		return err
	}
	if dDeps, dChildren, err := tx.edgeBlocks(tenant, e); err != nil {
		return err
	} else if dDeps != 0 || dChildren != 0 {
		if err := tx.addBlockers(tenant, e.From, dDeps, dChildren); err != nil {
			return err
		}
	}
	if e.Type == EdgeDependsOn {
		if err := tx.addDependents(tenant, e.To, 1); err != nil {
			return err
		}
	}
	return tx.Emit(tenant, EventEdgeAdded, e.From, e.CreatedBy, map[string]any{"from": e.From, "type": e.Type, "to": e.To})
}

// EdgePutProps rewrites the props of a live edge in place (no event: the
// caller's event names the change).
func (tx *Tx) EdgePutProps(tenant string, e *Edge) error {
	if err := tx.setJSON(edgeKey(tagEdgeOut, tenant, e.From, e.Type, e.To), e); err != nil {
		return err
	}
	return tx.setJSON(edgeKey(tagEdgeIn, tenant, e.To, e.Type, e.From), e)
}

// EdgeRetire moves a live edge to history with retired_at = now, merging
// extraProps into its props, and emits edge_retired.
func (tx *Tx) EdgeRetire(tenant string, e *Edge, by string, extraProps map[string]any) error {
	if dDeps, dChildren, err := tx.edgeBlocks(tenant, e); err != nil {
		return err
	} else if dDeps != 0 || dChildren != 0 {
		if err := tx.addBlockers(tenant, e.From, -dDeps, -dChildren); err != nil {
			return err
		}
	}
	if e.Type == EdgeDependsOn {
		if err := tx.addDependents(tenant, e.To, -1); err != nil {
			return err
		}
	}
	if err := tx.del(edgeKey(tagEdgeOut, tenant, e.From, e.Type, e.To)); err != nil {
		return err
	}
	if err := tx.del(edgeKey(tagEdgeIn, tenant, e.To, e.Type, e.From)); err != nil {
		return err
	}
	now := tx.now.UTC()
	e.RetiredAt = &now
	if e.Props == nil {
		e.Props = map[string]any{}
	}
	for k, v := range extraProps {
		e.Props[k] = v
	}
	seq, err := tx.nextSeq(tenant)
	if err != nil {
		return err
	}
	rec, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := tx.set(retiredEdgeKey(tagRetiredOut, tenant, e.From, e.Type, e.To, seq), rec); err != nil {
		return err
	}
	if err := tx.set(retiredEdgeKey(tagRetiredIn, tenant, e.To, e.Type, e.From, seq), rec); err != nil {
		return err
	}
	data := map[string]any{"from": e.From, "type": e.Type, "to": e.To}
	if o, ok := e.Props["outcome"]; ok {
		data["outcome"] = o
	}
	return tx.emitWithSeq(tenant, seq, EventEdgeRetired, e.From, by, data)
}

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

// EdgesOf lists the edges of node id: live ones first (out, then in, each in
// (type, peer) order), then retired ones (out, then in, oldest first per
// peer) when asked. fn receives each edge with the cursor that resumes the
// walk right after it; q.After takes such a cursor.
func (tx *Tx) EdgesOf(tenant, id string, q EdgeQuery, fn func(e *Edge, cursor []byte) (bool, error)) error {
	var tags []byte
	if q.Dir != DirIn {
		tags = append(tags, tagEdgeOut)
	}
	if q.Dir != DirOut {
		tags = append(tags, tagEdgeIn)
	}
	if q.IncludeRetired {
		if q.Dir != DirIn {
			tags = append(tags, tagRetiredOut)
		}
		if q.Dir != DirOut {
			tags = append(tags, tagRetiredIn)
		}
	}
	var afterTag byte
	var afterRest []byte
	if len(q.After) > 0 {
		afterTag, afterRest = q.After[0], q.After[1:]
		if !bytes.Contains(tags, []byte{afterTag}) {
			return fault.Invalidf("cursor", "not a cursor of this list")
		}
	}
	skipping := afterTag != 0
	stopped := false
	for _, tag := range tags {
		if skipping && tag != afterTag {
			continue
		}
		k := newKey(tag, tenant).str(id)
		if q.Type != "" {
			k = k.str(q.Type)
		}
		prefix := k.bytes()
		base := len(newKey(tag, tenant).bytes())
		var after []byte
		if skipping {
			after = append(newKey(tag, tenant).bytes(), afterRest...)
			skipping = false
		}
		err := tx.scan(prefix, after, false, true, func(key, val []byte) (bool, error) {
			var e Edge
			if err := json.Unmarshal(val, &e); err != nil {
				return false, err
			}
			cursor := append([]byte{tag}, key[base:]...)
			more, err := fn(&e, cursor)
			if !more {
				stopped = true
			}
			return more, err
		})
		if err != nil || stopped {
			return err
		}
	}
	return nil
}

// LiveEdges returns the live edges of id of one type in one direction.
func (tx *Tx) LiveEdges(tenant, id, typ string, dir Direction) ([]*Edge, error) {
	var out []*Edge
	err := tx.EdgesOf(tenant, id, EdgeQuery{Dir: dir, Type: typ}, func(e *Edge, _ []byte) (bool, error) {
		out = append(out, e)
		return true, nil
	})
	return out, err
}

// reaches reports whether a path of live depends_on/parent_of edges leads from
// start to goal.
func (tx *Tx) reaches(tenant, start, goal string) (bool, error) {
	if start == goal {
		return true, nil
	}
	seen := map[string]bool{start: true}
	frontier := []string{start}
	for len(frontier) > 0 {
		id := frontier[len(frontier)-1]
		frontier = frontier[:len(frontier)-1]
		for _, typ := range []string{EdgeDependsOn, EdgeParentOf} {
			edges, err := tx.LiveEdges(tenant, id, typ, DirOut)
			if err != nil {
				return false, err
			}
			for _, e := range edges {
				if e.To == goal {
					return true, nil
				}
				if !seen[e.To] {
					seen[e.To] = true
					frontier = append(frontier, e.To)
				}
			}
		}
	}
	return false, nil
}

// IdentityEnsure creates the identity node of sub if it does not exist yet.
func (tx *Tx) IdentityEnsure(tenant, sub string) error {
	id := IdentityID(sub)
	ok, err := tx.NodeExists(tenant, id)
	if err != nil || ok {
		return err
	}
	n := &Node{
		Tenant: tenant, ID: id, Type: IdentityType, Title: sub, Status: StatusOpen,
		Labels: []string{}, Props: map[string]any{}, Usage: map[string]float64{},
		UsageTotal: map[string]float64{}, OnChildFail: "fail", CreatedBy: sub,
	}
	return tx.NodeInsert(n, sub)
}
