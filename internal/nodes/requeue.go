package nodes

import (
	"context"
	"fmt"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

// MaxReasonLength bounds the reason of a requeue or a cancel, kept in the
// event of every node it reaches (a cancel's descendants, a bulk's nodes).
const MaxReasonLength = 4096

func checkReason(reason string) error {
	if len(reason) > MaxReasonLength {
		return fault.Invalidf("reason", "must be at most %d bytes", MaxReasonLength)
	}
	return nil
}

// Requeue puts a failed, dead or cancelled node back at rest (queued, or open
// without a queue) with attempts = 0, a clear error and no delay.
func (s *Service) Requeue(ctx context.Context, c Caller, id, reason string) (*records.Node, error) {
	if err := checkReason(reason); err != nil {
		return nil, err
	}
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
