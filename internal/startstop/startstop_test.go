package startstop

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// loop is the smallest service: it runs until its stopping context ends.
type loop struct {
	BaseStartStop
	runs  int
	cause error
}

func (l *loop) Start(ctx context.Context) error {
	ctx, ok, started, stopped := l.StartInit(ctx)
	if !ok {
		return nil
	}
	l.runs++
	go func() {
		started()
		defer stopped()
		<-ctx.Done()
		l.cause = context.Cause(ctx)
	}()
	return nil
}

var _ Service = (*loop)(nil)

func TestStartThenStop(t *testing.T) {
	t.Parallel()
	l := &loop{}
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, l.Start(ctx))
	<-l.Started()
	cancel() // Start's ctx bounds the start, not the service's life
	select {
	case <-l.Stopped():
		t.Fatal("the service stopped when Start's ctx ended")
	default:
	}
	require.NoError(t, l.Start(context.Background()), "a second Start does nothing")
	l.Stop()
	<-l.Stopped()
	require.ErrorIs(t, l.cause, ErrStop)
	l.Stop() // idempotent
	require.NoError(t, l.Start(context.Background()), "a Start after Stop does nothing")
	require.Equal(t, 1, l.runs)
}

func TestStopWithoutStart(t *testing.T) {
	t.Parallel()
	l := &loop{}
	l.Stop()
	<-l.Started()
	<-l.Stopped()
	require.NoError(t, l.Start(context.Background()))
	require.Zero(t, l.runs, "a stopped service never starts")
}

func TestFailedStartIsStopped(t *testing.T) {
	t.Parallel()
	var b BaseStartStop
	_, ok, _, stopped := b.StartInit(context.Background())
	require.True(t, ok)
	stopped() // the rebuild failed
	<-b.Started()
	<-b.Stopped()
	b.Stop()
	_, ok, _, _ = b.StartInit(context.Background())
	require.False(t, ok)
}

func TestConcurrentStartAndStop(t *testing.T) {
	t.Parallel()
	for range 50 {
		l := &loop{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(2)
			go func() { defer wg.Done(); _ = l.Start(context.Background()) }()
			go func() { defer wg.Done(); l.Stop() }()
		}
		wg.Wait()
		l.Stop()
		<-l.Stopped()
		require.LessOrEqual(t, l.runs, 1)
		if l.runs == 1 {
			require.True(t, errors.Is(l.cause, ErrStop))
		}
	}
}
