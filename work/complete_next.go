package work

import (
	"context"
	"fmt"

	"github.com/tether-run/tether/fault"
	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/lease"
)

// CompleteAndClaimNext completes cp's run and then claims the next ready node
// of np's queue exactly as ClaimNext(np) would, for a worker that takes one
// job at a time: one round trip instead of two, and, when a node is ready at
// once, one wait for the log instead of two (the completion and the claim are
// separate transactions sharing a barrier, so each keeps its own rules and a
// claim that fails never undoes the completion).
//
// When the completion fails nothing is claimed. When the claim fails the
// completion stands and the error is returned; retrying the whole call is
// safe, since a completion retried answers with the node again.
func (s *Service) CompleteAndClaimNext(ctx context.Context, cp CompleteParams, np ClaimNextParams) (*graph.Node, []*lease.ClaimResult, error) {
	if err := validUsage(cp.Usage); err != nil {
		return nil, nil, err
	}
	if !graph.ValidQueue(np.Queue) {
		return nil, nil, fault.Invalidf("next.queue", "must be 1-128 characters of [A-Za-z0-9._:-]")
	}
	bctx, durable := graph.WithBarrier(ctx)
	var done *graph.Node
	err := s.store.Update(bctx, func(tx *graph.Tx) (err error) {
		done, err = s.completeIn(tx, cp)
		return err
	})
	if err != nil {
		_ = durable.Wait()
		return nil, nil, fmt.Errorf("error completing node: %w", err)
	}
	// ClaimNext waits for its own claims to be durable; the completion
	// committed before them, so the barrier's wait below is then at once.
	got, cerr := s.ClaimNext(bctx, np)
	if err := durable.Wait(); err != nil {
		return nil, nil, fmt.Errorf("error completing node: %w", err)
	}
	if cerr != nil {
		return nil, nil, cerr
	}
	return done, got, nil
}
