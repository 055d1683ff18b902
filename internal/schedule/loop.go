package schedule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/deadline"
	"github.com/tether-run/tether/internal/graphstore"
)

// Ref names a schedule of a tenant.
type Ref struct{ Tenant, ID string }

// loop is the firing loop: a heap of the instant each enabled schedule is
// next due, kept in step by the commit hook of every write to a schedule
// (track), and one goroutine that sleeps on the clock until the earliest.
type loop struct {
	s     *Service
	clock clock.Clock
	retry time.Duration

	mu    sync.Mutex
	due   deadline.Heap[Ref]
	timer clock.Timer
	armed time.Time // when timer fires; zero when none is armed

	wake chan struct{}
}

func newLoop(s *Service, retry time.Duration) *loop {
	return &loop{
		s: s, clock: s.clock, retry: retry,
		wake: make(chan struct{}, 1),
	}
}

// Start reads every schedule's next fire from the store and starts the
// firing loop. Fires that fell due while the server was down are made at
// once, within each schedule's catch-up window.
//
// Stop (startstop's) ends the firing loop and waits for it: a fire in
// progress completes (it is one transaction), and a fire not yet made is
// made at the next start, within its catch-up window.
func (s *Service) Start(ctx context.Context) error {
	loopCtx, ok, started, stopped := s.StartInit(ctx)
	if !ok {
		return nil
	}
	l := s.loop
	err := s.store.View(func(tx *graphstore.Tx) error {
		return tx.Records().ScheduleListAll(func(tenant, id string, raw []byte) error {
			var rec Record
			if _, err := rec.UnmarshalMsg(raw); err != nil {
				return fmt.Errorf("error decoding schedule %q of tenant %q: %w", id, tenant, err)
			}
			if rec.Enabled && rec.NextFireAt != nil {
				l.set(Ref{tenant, id}, rec.due(tenant, *rec.NextFireAt))
			}
			return nil
		})
	})
	if err != nil {
		stopped()
		return fmt.Errorf("error reading schedules: %w", err)
	}
	go func() {
		started()
		defer stopped()
		l.run(loopCtx)
	}()
	return nil
}

// set records when ref is next due (zero: never) and wakes the loop when
// that is earlier than what it sleeps for.
func (l *loop) set(ref Ref, due time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if due.IsZero() {
		l.due.Remove(ref)
		return
	}
	l.due.Set(ref, due)
	if l.armed.IsZero() || due.Before(l.armed) {
		l.poke()
	}
}

// poke wakes the loop (without blocking).
func (l *loop) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// popDue takes the schedules due now out of the heap (each fire puts its
// schedule back through track), or arms the timer for the earliest one.
func (l *loop) popDue(ctx context.Context) []Ref {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		now := l.clock.Now()
		var out []Ref
		for {
			_, at, ok := l.due.Peek()
			if !ok || at.After(now) {
				break
			}
			ref, _, _ := l.due.Pop()
			out = append(out, ref)
		}
		if len(out) > 0 || ctx.Err() != nil {
			return out
		}
		if l.timer != nil {
			l.timer.Stop()
			l.timer, l.armed = nil, time.Time{}
		}
		_, at, ok := l.due.Peek()
		if !ok {
			l.s.TestSignals.Idle.Signal(time.Time{})
			return nil
		}
		l.armed = at
		l.timer = l.clock.AfterFunc(at.Sub(now), l.poke)
		// A timer is armed for a span, not an instant: if the clock moved
		// while it was armed (a test's fake clock jumping), it may wake too
		// late, so arm it again from the new time.
		if l.clock.Now().Sub(now) <= time.Millisecond {
			l.s.TestSignals.Idle.Signal(at)
			return nil
		}
	}
}

// run fires what is due until ctx, the stopping context, ends.
func (l *loop) run(ctx context.Context) {
	defer func() {
		l.mu.Lock()
		if l.timer != nil {
			l.timer.Stop()
			l.timer, l.armed = nil, time.Time{}
		}
		l.mu.Unlock()
	}()
	for ctx.Err() == nil {
		if refs := l.popDue(ctx); len(refs) > 0 {
			l.fireAll(refs)
			continue
		}
		select {
		case <-l.wake:
		case <-ctx.Done():
		}
	}
}

// fireAll makes the due fires of refs, one transaction per schedule,
// sharing one wait for the log.
func (l *loop) fireAll(refs []Ref) {
	// Not the stop signal: a fire begun is finished, so Stop never leaves
	// one half made (it could not be anyway: it is one transaction).
	ctx, durable := graphstore.WithBarrier(context.Background())
	var failed []Ref
	for _, ref := range refs {
		if err := l.s.fire(ctx, ref); err != nil {
			l.s.log.Error("schedule fire failed; retrying", "tenant", ref.Tenant, "schedule", ref.ID, "err", err)
			failed = append(failed, ref)
		}
	}
	if err := durable.Wait(); err != nil {
		l.s.log.Error("schedule fires not durable; retrying", "err", err)
		failed = refs
	}
	retryAt := l.clock.Now().Add(l.retry)
	for _, ref := range failed {
		l.set(ref, retryAt)
	}
	l.s.TestSignals.Fired.Signal(refs)
}

// fire makes the due fires of one schedule.
func (s *Service) fire(ctx context.Context, ref Ref) error {
	def, err := s.nodes.Defaults(ctx, ref.Tenant)
	if err != nil {
		return err
	}
	err = s.store.Update(ctx, func(tx *graphstore.Tx) error { return s.fireTx(tx, ref.Tenant, ref.ID, def) })
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
