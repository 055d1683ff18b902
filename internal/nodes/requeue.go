package nodes

import (
	"context"
	"fmt"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// Requeue puts a failed, dead or cancelled node back at rest (queued, or open
// without a queue) with attempts = 0, a clear error and no delay.
func (s *Service) Requeue(ctx context.Context, c Caller, id, reason string) (*records.Node, error) {
	var out *records.Node
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet(c.Tenant, id)
		if err != nil {
			return err
		}
		out = n
		return lifecycle.Requeue(tx, n, c.Sub, reason)
	})
	if err != nil {
		return nil, fmt.Errorf("error requeueing node: %w", err)
	}
	return out, nil
}
