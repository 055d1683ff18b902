package nodes

import (
	"context"
	"fmt"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// Cancel cancels the node and, atomically with it, every non-terminal
// descendant (parent_of) and dependent (depends_on with on_fail: cancel).
// Their live leases end (outcome cancelled), so holders get lease_lost.
// It returns the ids it cancelled, in the order it reached them.
func (s *Service) Cancel(ctx context.Context, c Caller, id, reason string) ([]string, error) {
	if err := checkReason(reason); err != nil {
		return nil, err
	}
	var cancelled []string
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		root, err := tx.NodeGet(c.Tenant, id)
		if err != nil {
			return err
		}
		cancelled, err = s.cancelTx(tx, c, root, reason)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error cancelling node: %w", err)
	}
	return cancelled, nil
}

func (s *Service) cancelTx(tx *graphstore.Tx, c Caller, root *records.Node, reason string) ([]string, error) {
	return lifecycle.CancelTree(tx, s.leases, root, c.Sub, reason)
}
