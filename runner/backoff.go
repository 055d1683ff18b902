package runner

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"
)

// backoff is one sequence of retries of Backoff.
type backoff struct {
	min, max time.Duration
	next     time.Duration
}

func newBackoff(b Backoff) backoff { return backoff{min: b.Min, max: b.Max} }

// delay is the wait before the next retry; at least retryAfter (the server's
// Retry-After) when that is longer.
func (b *backoff) delay(retryAfter time.Duration) time.Duration {
	if b.next < b.min {
		b.next = b.min
	}
	d := b.next/2 + rand.N(b.next/2+1)
	b.next = min(2*b.next, b.max)
	return max(d, retryAfter)
}

// reset starts over after a success.
func (b *backoff) reset() { b.next = 0 }

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// transient reports whether a call that answered status (0: no answer)
// may succeed if sent again.
func transient(status int) bool {
	return status == 0 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500
}
