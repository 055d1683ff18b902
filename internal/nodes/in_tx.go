package nodes

import (
	"context"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// What another package needs to make and cancel nodes inside a transaction
// of its own (a schedule's fire commits its record and its nodes together).

// Defaults returns the tenant policy values node creation needs. Read them
// before the transaction: they may take a write of their own.
func (s *Service) Defaults(ctx context.Context, tenant string) (Defaults, error) {
	return s.defaults(ctx, tenant)
}

// Prepare validates spec as a create by c would, and builds the node it
// describes (not yet stored; a UUIDv7 id when spec names none). field
// prefixes the names of invalid fields ("template."). A node made this way
// takes no unique key nor debounce_ms (a schedule's overlap rules its
// runs): they are refused.
func (s *Service) Prepare(c Caller, spec NodeSpec, def Defaults, field string) (*records.Node, error) {
	switch {
	case spec.Unique != nil:
		return nil, fault.Invalidf(field+"unique", "is not taken here: a schedule's overlap decides whether a run makes nodes")
	case spec.DebounceMS != nil:
		return nil, fault.Invalidf(field+"debounce_ms", "is not taken here: a schedule's overlap decides whether a run makes nodes")
	}
	n, _, err := s.prepare(c, spec, def, field)
	return n, err
}

// InsertTx stores a prepared node in tx with its parent_of edge and a
// depends_on edge (on_fail: cancel) to each of dependsOn; its created event
// and theirs are part of tx.
func (s *Service) InsertTx(tx *graphstore.Tx, c Caller, n *records.Node, dependsOn []string) error {
	return s.insertTx(tx, c, n, dependsOn)
}

// CancelTx is Cancel inside tx: node id and every non-terminal descendant
// and dependent that cancels with it.
func (s *Service) CancelTx(tx *graphstore.Tx, c Caller, id, reason string) ([]string, error) {
	root, err := tx.NodeGet(c.Tenant, id)
	if err != nil {
		return nil, err
	}
	return s.cancelTx(tx, c, root, reason)
}
