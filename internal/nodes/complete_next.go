package nodes

import (
	"context"
	"errors"
	"fmt"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/records"
)

// CompleteAndClaimNext completes cp's run and then claims the next ready node
// of np's queue as ClaimNext(np) would, for a worker that takes one job at a
// time: one round trip instead of two.
//
// When the completion changed no node but its own (no dependent, no parent:
// nothing it could have made ready), the claim is tried in the completion's
// own transaction: one commit, one event group. The claim then counts the
// lease and the running slot the completion gives back as still taken, so
// when it finds nothing (no node ready, the identity at its lease cap, the
// queue at max_running) it is tried again, as it is after any other
// completion, in a transaction of its own once the completion is applied,
// which sees what the completion made ready and gave back. A claim that finds
// no room never undoes the completion.
//
// When the completion fails nothing is claimed. When a claim in a
// transaction of its own fails (the identity's other leases fill its cap),
// the completion stands and the error is returned; a store error inside the
// shared transaction fails both. Retrying the whole call is safe either way,
// since a completion retried answers with the node again.
func (s *Service) CompleteAndClaimNext(ctx context.Context, cp CompleteParams, np ClaimNextParams) (*records.Node, []*leasing.ClaimResult, error) {
	if err := validUsage(cp.Usage); err != nil {
		return nil, nil, err
	}
	if !graphstore.ValidQueue(np.Queue) {
		return nil, nil, fault.Invalidf("next.queue", "must be 1-128 characters of [A-Za-z0-9._:-]")
	}
	np.Max = 1
	lim, err := s.limits(ctx, np.Tenant)
	if err != nil {
		return nil, nil, err
	}
	var done *records.Node
	var got []*leasing.ClaimResult
	err = s.store.Update(ctx, func(tx *graphstore.Tx) (err error) {
		if done, err = s.completeIn(tx, cp); err != nil {
			return err
		}
		if tx.NodesChanged() > 1 {
			return nil
		}
		got, err = s.claimNextTx(tx, np, np.filter(), lim, nil)
		var limited *fault.RateLimited
		if errors.As(err, &limited) {
			got, err = nil, nil
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("error completing node: %w", err)
	}
	if len(got) > 0 {
		if ctx.Err() != nil {
			// The caller went away while the claim committed.
			s.releaseUndelivered(np, got)
			return nil, nil, ctx.Err()
		}
		return done, got, nil
	}
	if got, err = s.ClaimNext(ctx, np); err != nil {
		return nil, nil, err
	}
	return done, got, nil
}
