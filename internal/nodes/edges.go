package nodes

import (
	"context"
	"fmt"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// EdgeSpec is the body of an edge create.
type EdgeSpec struct {
	From  string         `json:"from"`
	Type  string         `json:"type"`
	To    string         `json:"to"`
	Props map[string]any `json:"props,omitempty"`
}

// AddEdge stores a live edge. assigned edges are the server's alone; a
// depends_on edge's props.on_fail is cancel (default) or ignore; a node has at
// most one parent.
func (s *Service) AddEdge(ctx context.Context, c Caller, spec EdgeSpec) (*records.Edge, error) {
	if err := validEdgeKey(spec.From, spec.Type, spec.To); err != nil {
		return nil, err
	}
	props := spec.Props
	if props == nil {
		props = map[string]any{}
	}
	if spec.Type == graphstore.EdgeDependsOn {
		switch v := props["on_fail"]; v {
		case nil:
			props["on_fail"] = OnFailCancel
		case OnFailCancel, OnFailIgnore:
		default:
			return nil, fault.Invalidf("props.on_fail", "must be %q or %q", OnFailCancel, OnFailIgnore)
		}
	}
	if spec.From == spec.To && (spec.Type == graphstore.EdgeDependsOn || spec.Type == graphstore.EdgeParentOf) {
		return nil, &fault.Cycle{From: spec.From, Type: spec.Type, To: spec.To}
	}
	e := &records.Edge{From: spec.From, Type: spec.Type, To: spec.To, Props: props, CreatedBy: c.Sub}
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		if spec.Type != graphstore.EdgeParentOf {
			return tx.EdgeInsert(c.Tenant, e)
		}
		child, err := tx.NodeGet(c.Tenant, spec.To)
		if err != nil {
			return err
		}
		if _, err := tx.NodeGet(c.Tenant, spec.From); err != nil {
			return err
		}
		if child.Parent != "" {
			return &fault.Conflict{Reason: fmt.Sprintf("node %q already has parent %q", child.ID, child.Parent)}
		}
		if err := tx.EdgeInsert(c.Tenant, e); err != nil {
			return err
		}
		child.Parent = spec.From
		return tx.NodePut(child)
	})
	if err != nil {
		return nil, fmt.Errorf("error adding edge: %w", err)
	}
	return e, nil
}

func validEdgeKey(from, typ, to string) error {
	switch {
	case !graphstore.ValidID(from):
		return fault.Invalidf("from", "is not a valid node id")
	case !graphstore.ValidID(to):
		return fault.Invalidf("to", "is not a valid node id")
	case !graphstore.ValidEdgeType(typ):
		return fault.Invalidf("type", "must match [a-z][a-z0-9_]{0,63}")
	case typ == graphstore.EdgeAssigned:
		return fault.Invalidf("type", "assigned edges are managed by the server: claim and release instead")
	case (typ == graphstore.EdgeDependsOn || typ == graphstore.EdgeParentOf) && (graphstore.IsIdentityID(from) || graphstore.IsIdentityID(to)):
		return fault.Invalidf("type", "identity nodes take no part in %s", typ)
	}
	return nil
}

// RetireEdge moves the live edge (from, typ, to) to history.
func (s *Service) RetireEdge(ctx context.Context, c Caller, from, typ, to string) error {
	if err := validEdgeKey(from, typ, to); err != nil {
		return err
	}
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		e, err := tx.EdgeGet(c.Tenant, from, typ, to)
		if err != nil {
			return err
		}
		return s.retireEdgeTx(tx, c, e)
	})
	if err != nil {
		return fmt.Errorf("error retiring edge: %w", err)
	}
	return nil
}

// retireEdgeTx retires e and keeps the child's parent field in step.
func (s *Service) retireEdgeTx(tx *graphstore.Tx, c Caller, e *records.Edge) error {
	if err := tx.EdgeRetire(c.Tenant, e, c.Sub, nil); err != nil {
		return err
	}
	if e.Type != graphstore.EdgeParentOf {
		return nil
	}
	child, err := tx.NodeGet(c.Tenant, e.To)
	if _, gone := err.(*fault.NotFound); gone {
		return nil
	}
	if err != nil {
		return err
	}
	if child.Parent != e.From {
		return nil
	}
	child.Parent = ""
	return tx.NodePut(child)
}
