package nodes

import (
	"encoding/base64"
	"strings"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/records"
)

// NodeView is a node as the API shows it: stored fields plus readiness.
type NodeView struct {
	*records.Node
	Readiness
}

func viewTx(tx *graphstore.Tx, n *records.Node) (NodeView, error) {
	r, err := ReadinessTx(tx, n)
	return NodeView{Node: n, Readiness: r}, err
}

// Views computes the views of nodes just written, in a fresh snapshot. Only
// a node at rest (open or queued) can be ready, so the answers of claims and
// completions need no snapshot at all.
func (s *Service) Views(nodes ...*records.Node) ([]NodeView, error) {
	out := make([]NodeView, len(nodes))
	atRest := false
	for i, n := range nodes {
		if n.Status.AtRest() {
			atRest = true
			break
		}
		out[i] = NodeView{Node: n, Readiness: Readiness{BlockedBy: []string{}}}
	}
	if !atRest {
		return out, nil
	}
	err := s.store.View(func(tx *graphstore.Tx) error {
		for i, n := range nodes {
			v, err := viewTx(tx, n)
			if err != nil {
				return err
			}
			out[i] = v
		}
		return nil
	})
	return out, err
}

// Get returns one node.
func (s *Service) Get(tenant, id string) (NodeView, error) {
	var v NodeView
	err := s.store.View(func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(tenant, id)
		if err != nil {
			return err
		}
		v, err = viewTx(tx, n)
		return err
	})
	return v, err
}

// ListScanBudget is how many node records one page of a list request may
// read (graphstore.NodeQuery.ScanBudget): a filter that matches few nodes
// answers a short page, perhaps empty, with a cursor to go on, instead of
// walking the whole tenant in one request.
const ListScanBudget = 10000

// List returns one page of nodes; ready, when set, keeps only nodes whose
// readiness equals it. Identity nodes (identity:<sub>, the far end of
// assigned edges) are not work: they are listed only when q asks for type
// identity.
func (s *Service) List(tenant string, q graphstore.NodeQuery, ready *bool) ([]NodeView, string, error) {
	var out []NodeView
	var next string
	err := s.store.View(func(tx *graphstore.Tx) error {
		workOnly := q.Type != graphstore.IdentityType
		if ready != nil || workOnly {
			q.Match = func(tx *graphstore.Tx, n *records.Node) (bool, error) {
				if workOnly && n.Type == graphstore.IdentityType {
					return false, nil
				}
				if ready == nil {
					return true, nil
				}
				r, err := ReadinessTx(tx, n)
				return r.Ready == *ready, err
			}
		}
		nodes, cursor, err := tx.NodeList(tenant, q)
		if err != nil {
			return err
		}
		next = cursor
		out = make([]NodeView, len(nodes))
		for i, n := range nodes {
			if out[i], err = viewTx(tx, n); err != nil {
				return err
			}
		}
		return nil
	})
	return out, next, err
}

// Edges returns one page of the edges of node id.
func (s *Service) Edges(tenant, id string, q graphstore.EdgeQuery, limit int, cursor string) ([]*records.Edge, string, error) {
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || len(raw) < 2 {
			return nil, "", fault.Invalidf("cursor", "not a cursor of this list")
		}
		q.After = raw
	}
	var out []*records.Edge
	var next string
	err := s.store.View(func(tx *graphstore.Tx) error {
		if ok, err := tx.NodeExists(tenant, id); err != nil || !ok {
			if err == nil {
				err = &fault.NotFound{What: "node", ID: id}
			}
			return err
		}
		var last []byte
		return tx.EdgesOf(tenant, id, q, func(e *records.Edge, c []byte) (bool, error) {
			if len(out) == limit {
				next = base64.RawURLEncoding.EncodeToString(last)
				return false, nil
			}
			out = append(out, e)
			last = c
			return true, nil
		})
	})
	return out, next, err
}

// MaxSubgraphNodes bounds one subgraph answer.
const MaxSubgraphNodes = 10000

// Subgraph walks breadth first from id over live edges of the given types
// (every type when none are given) in both directions, up to depth hops, and
// returns the nodes reached and the edges walked.
func (s *Service) Subgraph(tenant, id string, depth int, types []string) ([]NodeView, []*records.Edge, error) {
	if len(types) == 0 {
		types = []string{""}
	}
	var nodes []NodeView
	var edges []*records.Edge
	err := s.store.View(func(tx *graphstore.Tx) error {
		root, err := tx.NodeGet(tenant, id)
		if err != nil {
			return err
		}
		seen := map[string]bool{id: true}
		seenEdge := map[string]bool{}
		v, err := viewTx(tx, root)
		if err != nil {
			return err
		}
		nodes = append(nodes, v)
		frontier := []string{id}
		for d := 0; d < depth && len(frontier) > 0; d++ {
			var next []string
			for _, nid := range frontier {
				for _, typ := range types {
					es, err := tx.LiveEdges(tenant, nid, typ, graphstore.DirBoth)
					if err != nil {
						return err
					}
					for _, e := range es {
						key := e.From + "\x00" + e.Type + "\x00" + e.To
						if !seenEdge[key] {
							seenEdge[key] = true
							edges = append(edges, e)
						}
						peer := e.To
						if peer == nid {
							peer = e.From
						}
						if seen[peer] {
							continue
						}
						if len(seen) >= MaxSubgraphNodes {
							return fault.Invalidf("depth", "the subgraph holds more than %d nodes; ask for less depth or fewer types", MaxSubgraphNodes)
						}
						seen[peer] = true
						n, err := tx.NodeGet(tenant, peer)
						if err != nil {
							return err
						}
						v, err := viewTx(tx, n)
						if err != nil {
							return err
						}
						nodes = append(nodes, v)
						next = append(next, peer)
					}
				}
			}
			frontier = next
		}
		return nil
	})
	return nodes, edges, err
}

// LeaseView is a live lease with the node it is on.
type LeaseView struct {
	NodeID string
	Queue  string
	*records.Lease
}

// Leases returns one page of the live leases of tenant, in node id order.
func (s *Service) Leases(tenant, holder, queue string, limit int, cursor string) ([]LeaseView, string, error) {
	var out []LeaseView
	var next string
	after := ""
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || len(raw) == 0 || !strings.HasPrefix(string(raw), "l:") {
			return nil, "", fault.Invalidf("cursor", "not a cursor of this list")
		}
		after = string(raw[2:])
	}
	err := s.store.View(func(tx *graphstore.Tx) error {
		now := tx.Now()
		return tx.LiveLeaseIDs(tenant, after, func(_, id string) (bool, error) {
			n, err := tx.NodeGet(tenant, id)
			if err != nil {
				return false, err
			}
			if !leasing.Live(n, now) || (holder != "" && n.Lease.By != holder) || (queue != "" && n.Queue != queue) {
				return true, nil
			}
			if len(out) == limit {
				next = base64.RawURLEncoding.EncodeToString([]byte("l:" + out[len(out)-1].NodeID))
				return false, nil
			}
			out = append(out, LeaseView{NodeID: n.ID, Queue: n.Queue, Lease: n.Lease})
			return true, nil
		})
	})
	return out, next, err
}
