package main

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// The delays between retries of a call that failed for a reason that may
// pass (the server unreachable, a 5xx, a 429).
const (
	workBackoffMin = 100 * time.Millisecond
	workBackoffMax = 10 * time.Second
)

// workBackoff is an exponential backoff with jitter: each delay doubles, up
// to workBackoffMax, and is drawn from its upper half, so that a fleet that
// lost the server at once does not come back at once.
type workBackoff struct {
	next time.Duration
}

// delay is the wait before the next retry; at least retryAfter (the server's
// Retry-After) when that is longer.
func (b *workBackoff) delay(retryAfter time.Duration) time.Duration {
	if b.next < workBackoffMin {
		b.next = workBackoffMin
	}
	d := b.next/2 + rand.N(b.next/2+1)
	b.next = min(2*b.next, workBackoffMax)
	return max(d, retryAfter)
}

// reset starts over after a success.
func (b *workBackoff) reset() { b.next = 0 }

// workSleep waits d; false when ctx ended first.
func workSleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// workRetryAfter is a response's Retry-After in seconds (0 without one).
func workRetryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs < 0 {
		return 0
	}
	return time.Duration(secs) * time.Second
}

// workTransient reports whether a call that answered status (0: no answer)
// may succeed if sent again.
func workTransient(status int) bool {
	return status == 0 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500
}
