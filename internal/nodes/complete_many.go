package nodes

import (
	"context"
	"errors"
	"fmt"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// CompleteChunk bounds the completions one transaction makes, as claimChunk
// bounds claims: the reaper's urgent work and other callers' writes run
// between chunks instead of waiting behind one long transaction (a chunk of
// 128 holds the writer 3-4 ms). 128 takes the usual batch of completes (100,
// what scenario (b) sends) in one. Claims stay at 64: in chunks of 128 they
// moved (b) by 5-9 %, but the reaper lag of (f), whose 10 claims requests of
// 1 000 run while their first leases expire, from p99 about 100 ms to 143.
const CompleteChunk = 128

// errChunkFailed rolls back a chunk of CompleteMany in which an op failed.
var errChunkFailed = errors.New("an op of the chunk failed")

// CompleteMany completes many nodes, in the order given, and answers each op
// on its own with exactly what Complete would have: out[i] and errs[i] are
// Complete(ctx, ps[i]) as if the ops had run one after another.
//
// It runs CompleteChunk ops per transaction (one event group and one store
// request for the chunk, instead of one each per op). When any op of a chunk
// fails, the chunk's transaction is rolled back, leaving nothing, and its ops
// run again one transaction each, so that the failure is that op's alone and
// the others succeed as they would have. Under a barrier (graphstore.WithBarrier)
// it returns once the ops are applied, and the barrier waits for the log.
func (s *Service) CompleteMany(ctx context.Context, ps []CompleteParams) (out []*records.Node, errs []error) {
	out, errs = make([]*records.Node, len(ps)), make([]error, len(ps))
	idx := make([]int, 0, min(len(ps), CompleteChunk))
	for start := 0; start < len(ps); start += CompleteChunk {
		idx = idx[:0]
		for i := start; i < min(len(ps), start+CompleteChunk); i++ {
			if err := validUsage(ps[i].Usage); err != nil {
				errs[i] = err
				continue
			}
			idx = append(idx, i)
		}
		err := s.store.Update(ctx, func(tx *graphstore.Tx) (err error) {
			defer func() {
				// A panic is one op's too: its own transaction below meets
				// it again, as Complete would have.
				if recover() != nil {
					err = errChunkFailed
				}
			}()
			for _, i := range idx {
				if out[i], err = s.completeIn(tx, ps[i]); err != nil {
					return errChunkFailed
				}
			}
			return nil
		})
		switch {
		case err == nil:
		case errors.Is(err, errChunkFailed):
			for _, i := range idx {
				out[i], errs[i] = s.Complete(ctx, ps[i])
			}
		default:
			// The store refused the whole transaction (unavailable, the
			// caller gone): each op would have met the same.
			for _, i := range idx {
				out[i], errs[i] = nil, fmt.Errorf("error completing node: %w", err)
			}
		}
	}
	return out, errs
}
