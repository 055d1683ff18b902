package nodes

import (
	"context"
	"fmt"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/records"
)

// Delete removes a node. A running node needs force (its lease ends with
// outcome cancelled). Its edges are retired, never erased, so the history of
// who carried it stays answerable.
func (s *Service) Delete(ctx context.Context, c Caller, id string, force bool) error {
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(c.Tenant, id)
		if err != nil {
			return err
		}
		if graphstore.IsIdentityID(n.ID) {
			return &fault.Conflict{Reason: "identity nodes are managed by the server"}
		}
		if leasing.Live(n, tx.Now()) && !force {
			return &fault.Conflict{Reason: "node is running; delete with force=true to end its lease", Holder: n.Lease.By, ExpiresAt: n.Lease.ExpiresAt}
		}
		if err := s.leases.EndRun(tx, n, leasing.OutcomeCancelled, c.Sub); err != nil {
			return err
		}
		var edges []*records.Edge
		if err := tx.EdgesOf(c.Tenant, id, graphstore.EdgeQuery{Dir: graphstore.DirBoth}, func(e *records.Edge, _ []byte) (bool, error) {
			edges = append(edges, e)
			return true, nil
		}); err != nil {
			return err
		}
		for _, e := range edges {
			retire := s.retireEdgeTx
			if e.To == id {
				// The node itself is going: no parent field to keep in step.
				retire = func(tx *graphstore.Tx, c Caller, e *records.Edge) error {
					return tx.EdgeRetire(c.Tenant, e, c.Sub, nil)
				}
			}
			if err := retire(tx, c, e); err != nil {
				return err
			}
		}
		return tx.NodeDelete(n, c.Sub)
	})
	if err != nil {
		return fmt.Errorf("error deleting node: %w", err)
	}
	return nil
}
