package startstop

import (
	"context"
	"errors"
	"sync"
)

// ErrStop is the cause of a stopping context's cancellation when Stop
// ended it, so a loop can tell a stop from any other cancellation.
var ErrStop = errors.New("service stopped")

// Service is a background service with one start and stop shape.
type Service interface {
	// Start starts the service and returns once it is running in the
	// background, or with the error that kept it from starting.
	Start(ctx context.Context) error
	// Stop stops the service and waits for it; see BaseStartStop.Stop.
	Stop()
	// Started is closed once the service runs (or has stopped).
	Started() <-chan struct{}
	// Stopped is closed once the service has stopped.
	Stopped() <-chan struct{}
}

type state int

const (
	stateIdle state = iota
	stateRunning
	stateStopped
)

// BaseStartStop is embedded by a service to give it Stop, Started and
// Stopped; its Start calls StartInit. The zero value is ready.
type BaseStartStop struct {
	mu       sync.Mutex
	state    state
	cancel   context.CancelCauseFunc
	started  chan struct{}
	stopped  chan struct{}
	startOne sync.Once
}

// channels allocates the two channels on first use; b.mu is held.
func (b *BaseStartStop) channels() {
	if b.started == nil {
		b.started = make(chan struct{})
		b.stopped = make(chan struct{})
	}
}

// StartInit begins a Start. When ok is false the service already started
// or stopped, and Start returns nil at once. Otherwise ctx is the stopping
// context every loop, long wait and write of the service watches; started
// is called once the loop runs and stopped once it has returned (it also
// closes Started, so a start that fails calls only stopped):
//
//	func (s *Service) Start(ctx context.Context) error {
//		ctx, ok, started, stopped := s.StartInit(ctx)
//		if !ok {
//			return nil
//		}
//		if err := s.rebuild(ctx); err != nil {
//			stopped()
//			return err
//		}
//		go func() {
//			started()
//			defer stopped()
//			s.run(ctx)
//		}()
//		return nil
//	}
func (b *BaseStartStop) StartInit(ctx context.Context) (_ context.Context, ok bool, started, stopped func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.channels()
	if b.state != stateIdle {
		return ctx, false, nil, nil
	}
	b.state = stateRunning
	ctx, b.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	startedCh, stoppedCh, cancel := b.started, b.stopped, b.cancel
	started = func() { b.startOne.Do(func() { close(startedCh) }) }
	return ctx, true, started, func() {
		b.mu.Lock()
		b.state = stateStopped
		b.mu.Unlock()
		cancel(ErrStop)
		started()
		close(stoppedCh)
	}
}

// Stop cancels the stopping context and waits until the service's loop has
// returned. A service never started is marked stopped, so that a later
// Start does nothing.
func (b *BaseStartStop) Stop() {
	b.mu.Lock()
	b.channels()
	switch b.state {
	case stateIdle:
		b.state = stateStopped
		b.startOne.Do(func() { close(b.started) })
		close(b.stopped)
	case stateRunning:
		b.cancel(ErrStop)
	}
	wait := b.stopped
	b.mu.Unlock()
	<-wait
}

// Started is closed once the service's loop runs, or once it has stopped
// without running.
func (b *BaseStartStop) Started() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.channels()
	return b.started
}

// Stopped is closed once the service has stopped.
func (b *BaseStartStop) Stopped() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.channels()
	return b.stopped
}
