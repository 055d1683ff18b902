package lifecycle

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/records"
)

// retryDelay is how long a failed run waits before it may run again: what
// the caller asked for, exactly, or else the node's backoff for its attempt
// with equal jitter (a uniform delay from half the backoff to all of it), so
// that the runs of many nodes failing together do not come back together.
func retryDelay(n *records.Node, asked *time.Duration) time.Duration {
	if asked != nil {
		return *asked
	}
	d := backoffDelay(n)
	if d <= 1 {
		return d
	}
	// Whole milliseconds, the precision of run_at in the API.
	return (d/2 + rand.N(d-d/2+1)).Truncate(time.Millisecond)
}

// backoffDelay is the node's backoff for its attempt, before jitter.
func backoffDelay(n *records.Node) time.Duration {
	b := n.Backoff
	if b == nil || b.InitialMS <= 0 {
		return 0
	}
	factor := b.Factor
	if factor < 1 {
		factor = 1
	}
	ms := float64(b.InitialMS) * math.Pow(factor, float64(max(0, n.Attempts-1)))
	if b.MaxMS > 0 && ms > float64(b.MaxMS) {
		ms = float64(b.MaxMS)
	}
	// The growth is capped before the conversion: a float beyond int64 has
	// no defined conversion.
	return duration.FromMS(int64(min(ms, float64(duration.MaxMS))))
}
