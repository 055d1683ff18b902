package blob

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tether-run/tether/internal/graphstore"
)

// sweepEvery is how often unreferenced blobs are looked for: a blob is
// collected between Grace and Grace + sweepEvery after its last reference
// went (or its upload, if none came).
func (s *Service) sweepEvery() time.Duration { return min(s.grace, time.Minute) }

// Collect removes every blob no node has named for the grace period, record
// first, then file, and returns how many it removed.
func (s *Service) Collect(ctx context.Context) (int, error) {
	total := 0
	for {
		due := s.clock.Now().Add(-s.grace)
		ids := s.store.BlobOrphans(due, collectBatch)
		n := 0
		for _, id := range ids {
			ok, err := s.collect(ctx, id, due)
			if err != nil {
				return total, err
			}
			if ok {
				n++
			}
		}
		total += n
		// Nothing collected of a full batch: the rest were referenced again
		// or touched meanwhile and the next sweep sees them as they are.
		if len(ids) < collectBatch || n == 0 {
			return total, nil
		}
	}
}

func (s *Service) collect(ctx context.Context, id graphstore.BlobID, due time.Time) (bool, error) {
	mu := s.stripe(id.Tenant, id.SHA)
	mu.Lock()
	defer mu.Unlock()
	var deleted bool
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		var err error
		deleted, err = tx.BlobDelete(id.Tenant, id.SHA, due)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("error collecting blob %s of %s: %w", id.SHA, id.Tenant, err)
	}
	if !deleted {
		return false, nil
	}
	// A crash before this leaves a file with no record, which open removes.
	s.removeFile(s.path(id.Tenant, id.SHA))
	return true, nil
}

// Start begins the timed sweeps, on the service's clock.
func (s *Service) Start(ctx context.Context) error {
	ctx, ok, started, stopped := s.StartInit(ctx)
	if !ok {
		return nil
	}
	s.arm()
	go func() {
		started()
		defer stopped()
		s.run(ctx)
	}()
	return nil
}

// arm schedules the next sweep one sweepEvery from now on the clock.
func (s *Service) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer = s.clock.AfterFunc(s.sweepEvery(), func() {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	})
}

// run sweeps at each wake until ctx, the stopping context, ends.
func (s *Service) run(ctx context.Context) {
	defer func() {
		s.mu.Lock()
		s.timer.Stop()
		s.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		n, err := s.Collect(ctx)
		if err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("error collecting unreferenced blobs", "err", err)
		}
		if n > 0 {
			s.log.Info("collected unreferenced blobs", "count", n)
		}
		// The next sweep is armed before Swept hears of this one, so a test
		// that moves the clock once it has heard finds it armed.
		s.arm()
		s.TestSignals.Swept.Signal(Sweep{Collected: n, Err: err})
	}
}
