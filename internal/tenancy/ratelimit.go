package tenancy

import (
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/clock"
)

const (
	limiterShards = 64
	// limiterSweepEvery is how often a shard drops its idle buckets.
	limiterSweepEvery = time.Minute
	// limiterShardCap bounds a shard's buckets; past it an arbitrary bucket
	// is dropped, which can only make the limiter more lenient.
	limiterShardCap = 4096
	// maxRetryAfter keeps absurdly low rates from overflowing a Duration.
	maxRetryAfter = 24 * time.Hour
)

type bucketKey struct{ tenant, subject string }

// bucket is a token bucket as of last; rate and burst are those of the last
// call, so a policy change applies from the next request on.
type bucket struct {
	tokens float64
	last   time.Time
	rate   float64
	burst  float64
}

// idle reports whether the bucket has refilled by now: dropping it then is
// the same as keeping it, since a new bucket starts full.
func (b *bucket) idle(now time.Time) bool {
	return b.tokens+now.Sub(b.last).Seconds()*b.rate >= b.burst
}

type limiterShard struct {
	mu        sync.Mutex
	buckets   map[bucketKey]*bucket
	lastSweep time.Time
}

// limiter is a token bucket per (tenant, subject), in memory.
type limiter struct {
	clock  clock.Clock
	seed   maphash.Seed
	shards [limiterShards]limiterShard
}

func newLimiter(clk clock.Clock) *limiter {
	l := &limiter{clock: clk, seed: maphash.MakeSeed()}
	now := clk.Now()
	for i := range l.shards {
		l.shards[i].buckets = map[bucketKey]*bucket{}
		l.shards[i].lastSweep = now
	}
	return l
}

// allow takes one token from the bucket of (tenant, subject), which refills
// at rps tokens a second up to a burst of 2*rps (at least 1). rps <= 0 is no
// limit. When the bucket is empty it returns how long until a token is there.
func (l *limiter) allow(tenant, subject string, rps float64) (bool, time.Duration) {
	burst := max(2*rps, 1)
	if !(rps > 0) || math.IsInf(burst, 0) {
		return true, 0
	}
	key := bucketKey{tenant, subject}
	sh := &l.shards[maphash.Comparable(l.seed, key)%limiterShards]
	now := l.clock.Now()

	sh.mu.Lock()
	defer sh.mu.Unlock()
	if now.Sub(sh.lastSweep) >= limiterSweepEvery {
		sh.sweep(now)
	}
	b := sh.buckets[key]
	if b == nil {
		if len(sh.buckets) >= limiterShardCap {
			for k := range sh.buckets {
				delete(sh.buckets, k)
				break
			}
		}
		b = &bucket{tokens: burst, last: now}
		sh.buckets[key] = b
	} else if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens += elapsed.Seconds() * b.rate
		b.last = now
	}
	b.rate, b.burst = rps, burst
	b.tokens = min(b.tokens, burst)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := (1 - b.tokens) / rps * float64(time.Second)
	if wait >= float64(maxRetryAfter) {
		return false, maxRetryAfter
	}
	return false, time.Duration(math.Ceil(wait))
}

func (sh *limiterShard) sweep(now time.Time) {
	for k, b := range sh.buckets {
		if b.idle(now) {
			delete(sh.buckets, k)
		}
	}
	sh.lastSweep = now
}

// size is the number of buckets held, for tests.
func (l *limiter) size() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.buckets)
		sh.mu.Unlock()
	}
	return n
}
