package testsignal

import (
	"sync/atomic"
	"time"
)

// TB is the part of testing.TB a signal uses; the package does not import
// testing, so that production binaries that carry signals do not either.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// buffer is how many signals a test may leave unread.
const buffer = 1000

// waitTimeout bounds every Wait: long enough for a loaded CI machine, short
// enough that a signal that never comes fails the test.
const waitTimeout = 10 * time.Second

// Signal is a typed channel that a service sends on when a test has
// enabled it. The zero value is off.
type Signal[T any] struct {
	ch       atomic.Pointer[chan T]
	overflow atomic.Bool
}

// Init enables the signal for the rest of tb.
func (s *Signal[T]) Init(tb TB) {
	ch := make(chan T, buffer)
	s.ch.Store(&ch)
	tb.Cleanup(func() {
		if s.overflow.Load() {
			tb.Errorf("testsignal: more than %d signals left unread", buffer)
		}
	})
}

// Signal sends v when a test has enabled the signal; otherwise it does
// nothing.
func (s *Signal[T]) Signal(v T) {
	p := s.ch.Load()
	if p == nil {
		return
	}
	select {
	case *p <- v:
	default:
		s.overflow.Store(true)
	}
}

// Wait returns the next value, failing tb when none comes in time.
func (s *Signal[T]) Wait(tb TB) T {
	tb.Helper()
	return s.WaitFor(tb, func(T) bool { return true })
}

// WaitFor discards values until one satisfies ok and returns it, failing
// tb when none comes in time.
func (s *Signal[T]) WaitFor(tb TB, ok func(T) bool) T {
	tb.Helper()
	p := s.ch.Load()
	if p == nil {
		tb.Fatal("testsignal: Wait on a signal that Init did not enable")
	}
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	for {
		select {
		case v := <-*p:
			if ok(v) {
				return v
			}
		case <-timeout.C:
			tb.Fatalf("testsignal: no signal within %s", waitTimeout)
		}
	}
}
