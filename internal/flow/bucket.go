package flow

import (
	"math"
	"time"
)

// Bucket is a token bucket: Rate.PerSecond tokens a second, at most
// Rate.Burst kept. The zero Bucket is empty and starts filling at the
// first Take.
type Bucket struct {
	tokens float64
	last   int64 // unix ns of the last refill; 0: never
}

// refill adds the tokens earned since the last refill, up to the burst.
func (b *Bucket) refill(r Rate, now time.Time) {
	ns := now.UnixNano()
	if b.last != 0 && ns > b.last {
		b.tokens = math.Min(float64(r.Burst), b.tokens+float64(ns-b.last)/1e9*r.PerSecond)
	}
	if b.last == 0 || ns > b.last {
		b.last = ns
	}
}

// Wait is how long until the bucket holds a whole token (0: it does now).
func (b *Bucket) Wait(r Rate, now time.Time) time.Duration {
	b.refill(r, now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration(math.Ceil((1 - b.tokens) / r.PerSecond * 1e9))
}

// Take takes a token; call it only after Wait answered 0 at now.
func (b *Bucket) Take() { b.tokens-- }
