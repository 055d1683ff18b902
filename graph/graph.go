package graph

import (
	"context"
	"strings"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// defaultLimit is the page size of a NodeQuery without one.
const defaultLimit = 100

// Graph answers queries over an open store. It is safe for concurrent use
// and valid until the store it was opened from is closed.
type Graph struct {
	store *graphstore.Store
}

// New is the Graph of an open store. It is for the packages that open one
// (lease, the test kits); a program gets its Graph from lease.Store.Graph.
func New(store *graphstore.Store) *Graph { return &Graph{store: store} }

// view runs fn on one snapshot unless ctx has ended.
func (g *Graph) view(ctx context.Context, fn func(*graphstore.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return translate(g.store.View(fn))
}

// Node returns node id of tenant, or an error matching ErrNotFound.
func (g *Graph) Node(ctx context.Context, tenant, id string) (*Node, error) {
	var out *Node
	err := g.view(ctx, func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(tenant, id)
		if err != nil {
			return err
		}
		out = nodeOf(n)
		return nil
	})
	return out, err
}

// Nodes returns one page of tenant's nodes selected by q, and the cursor of
// the next page ("" at the end). Identity nodes, which stand for workers
// and are not work, are never listed.
func (g *Graph) Nodes(ctx context.Context, tenant string, q NodeQuery) ([]*Node, string, error) {
	sq := graphstore.NodeQuery{
		Status: string(q.Status), Queue: q.Queue, Type: q.Type, Label: q.Label,
		Holder: q.Holder, Parent: q.Parent, Limit: q.Limit, Cursor: q.Cursor,
		Match: func(_ *graphstore.Tx, n *records.Node) (bool, error) {
			return n.Type != graphstore.IdentityType, nil
		},
	}
	if sq.Limit == 0 {
		sq.Limit = defaultLimit
	}
	var out []*Node
	var next string
	err := g.view(ctx, func(tx *graphstore.Tx) error {
		ns, cursor, err := tx.NodeList(tenant, sq)
		if err != nil {
			return err
		}
		next = cursor
		out = make([]*Node, len(ns))
		for i, n := range ns {
			out[i] = nodeOf(n)
		}
		return nil
	})
	return out, next, err
}

// Edges returns every edge of node id that q selects: live ones first,
// then, with q.IncludeRetired, the retired ones. A node that was deleted
// keeps its retired edges.
func (g *Graph) Edges(ctx context.Context, tenant, id string, q EdgeQuery) ([]Edge, error) {
	var out []Edge
	err := g.view(ctx, func(tx *graphstore.Tx) error {
		return tx.EdgesOf(tenant, id, graphstore.EdgeQuery{Dir: graphstore.Direction(q.Dir), Type: q.Type, IncludeRetired: q.IncludeRetired},
			func(e *records.Edge, _ []byte) (bool, error) {
				out = append(out, edgeOf(e))
				return true, nil
			})
	})
	return out, err
}

// Children returns the ids of node id's live children (its parent_of
// edges).
func (g *Graph) Children(ctx context.Context, tenant, id string) ([]string, error) {
	es, err := g.Edges(ctx, tenant, id, EdgeQuery{Type: EdgeParentOf, Dir: DirOut})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.To
	}
	return ids, nil
}

// Carriers returns who carried node id: one Assignment per run, the live
// one (if any) first, then the ended ones in the order they were claimed.
// It answers for a deleted node too.
func (g *Graph) Carriers(ctx context.Context, tenant, id string) ([]Assignment, error) {
	es, err := g.Edges(ctx, tenant, id, EdgeQuery{Type: EdgeAssigned, Dir: DirOut, IncludeRetired: true})
	if err != nil {
		return nil, err
	}
	return assignments(es), nil
}

// CarriedBy returns the runs worker carried in tenant, live ones first,
// then the ended ones in the order they were claimed.
func (g *Graph) CarriedBy(ctx context.Context, tenant, worker string) ([]Assignment, error) {
	if !graphstore.ValidSubject(worker) {
		return nil, nil // no such worker can hold a lease
	}
	es, err := g.Edges(ctx, tenant, graphstore.IdentityID(worker), EdgeQuery{Type: EdgeAssigned, Dir: DirIn, IncludeRetired: true})
	if err != nil {
		return nil, err
	}
	return assignments(es), nil
}

func assignments(es []Edge) []Assignment {
	out := make([]Assignment, len(es))
	for i, e := range es {
		out[i] = Assignment{
			NodeID:    e.From,
			Worker:    strings.TrimPrefix(e.To, graphstore.IdentityPrefix),
			Session:   str(e.Props["session"]),
			Fence:     fenceOf(e.Props["fence"]),
			Outcome:   Outcome(str(e.Props["outcome"])),
			ClaimedAt: e.CreatedAt,
			EndedAt:   e.RetiredAt,
		}
	}
	return out
}
