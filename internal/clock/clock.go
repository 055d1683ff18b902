// Package clock is the time source injected wherever time decides an outcome
// (lease expiry, reaper wake-ups, token validity), so tests can move time by hand
// instead of sleeping. Production code uses Real; tests use clocktest.Fake.
package clock

import "time"

// Clock tells the time and arms timers. Implementations must be safe for
// concurrent use.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed on this clock.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a stoppable pending call made by AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not run yet; it reports whether it did.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now returns the current wall-clock time.
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// OrReal returns c, or the wall clock when c is nil: the default of every
// Clock a caller may leave out.
func OrReal(c Clock) Clock { return Or(c, Real{}) }

// Or returns c, or fallback when c is nil (a service defaulting to its
// store's clock, say).
func Or(c, fallback Clock) Clock {
	if c == nil {
		return fallback
	}
	return c
}
