package tenancy

import (
	"fmt"
	"hash/maphash"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAllowTokenBucket(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	allow := func(sub string, rps float64) (bool, time.Duration) { return b.svc.Allow("acme", sub, rps) }

	// rps 1: a burst of 2, then one a second.
	for range 2 {
		ok, wait := allow("a", 1)
		require.True(t, ok)
		require.Zero(t, wait)
	}
	ok, wait := allow("a", 1)
	require.False(t, ok)
	require.Equal(t, time.Second, wait)

	b.clk.Advance(400 * time.Millisecond)
	ok, wait = allow("a", 1)
	require.False(t, ok)
	require.Equal(t, 600*time.Millisecond, wait)

	b.clk.Advance(600 * time.Millisecond)
	ok, _ = allow("a", 1)
	require.True(t, ok)
	ok, _ = allow("a", 1)
	require.False(t, ok)

	// Other subjects and other tenants have their own buckets.
	ok, _ = allow("b", 1)
	require.True(t, ok)
	ok, _ = b.svc.Allow("other", "a", 1)
	require.True(t, ok)

	// A long pause refills only up to the burst.
	b.clk.Advance(time.Hour)
	for range 2 {
		ok, _ = allow("a", 1)
		require.True(t, ok)
	}
	ok, _ = allow("a", 1)
	require.False(t, ok)
}

func TestAllowNoLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	for range 1000 {
		ok, wait := b.svc.Allow("acme", "a", 0)
		require.True(t, ok)
		require.Zero(t, wait)
	}
	ok, _ := b.svc.Allow("acme", "a", -5)
	require.True(t, ok)
	require.Zero(t, b.svc.limiter.size())
}

func TestAllowSlowRateHasBurstOfOne(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ok, _ := b.svc.Allow("acme", "a", 0.25)
	require.True(t, ok)
	ok, wait := b.svc.Allow("acme", "a", 0.25)
	require.False(t, ok)
	require.Equal(t, 4*time.Second, wait)

	// Absurdly slow rates do not overflow the wait.
	ok, _ = b.svc.Allow("acme", "z", 1e-300)
	require.True(t, ok)
	ok, wait = b.svc.Allow("acme", "z", 1e-300)
	require.False(t, ok)
	require.Equal(t, maxRetryAfter, wait)
}

func TestAllowRateChange(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	// A full bucket at rps 10 holds 20; lowered to 1 it holds at most 2.
	ok, _ := b.svc.Allow("acme", "a", 10)
	require.True(t, ok)
	for range 2 {
		ok, _ = b.svc.Allow("acme", "a", 1)
		require.True(t, ok)
	}
	ok, _ = b.svc.Allow("acme", "a", 1)
	require.False(t, ok)
}

// sweepAll runs every shard's sweep now, as the shards' own timers would.
func sweepAll(l *limiter) {
	now := l.clock.Now()
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		sh.sweep(now)
		sh.mu.Unlock()
	}
}

func TestAllowEvictsIdleBuckets(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	l := b.svc.limiter
	for i := range 500 {
		ok, _ := b.svc.Allow("acme", fmt.Sprintf("agent-%d", i), 5)
		require.True(t, ok)
	}
	for range 10 {
		ok, _ := b.svc.Allow("acme", "busy", 5)
		require.True(t, ok)
	}
	require.Equal(t, 501, l.size())

	// Not yet refilled (9.5 of 10 tokens): kept.
	b.clk.Advance(100 * time.Millisecond)
	sweepAll(l)
	require.Equal(t, 501, l.size())

	// Refilled: dropped, which changes nothing since a new bucket is full.
	// "busy" has 5.5 of 10 tokens and stays.
	b.clk.Advance(time.Second)
	sweepAll(l)
	require.Equal(t, 1, l.size())
	for range 5 {
		ok, _ := b.svc.Allow("acme", "busy", 5)
		require.True(t, ok)
	}
	ok, _ := b.svc.Allow("acme", "busy", 5)
	require.False(t, ok)

	// Shards sweep themselves when touched once the interval has passed.
	b.clk.Advance(limiterSweepEvery)
	b.svc.Allow("acme", "busy", 5)
	sh := &l.shards[maphash.Comparable(l.seed, bucketKey{"acme", "busy"})%limiterShards]
	sh.mu.Lock()
	require.Equal(t, b.clk.Now(), sh.lastSweep)
	sh.mu.Unlock()
}

func TestAllowShardCap(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	l := b.svc.limiter
	var subjects []string
	for i := 0; len(subjects) < limiterShardCap+50; i++ {
		sub := fmt.Sprintf("agent-%d", i)
		if maphash.Comparable(l.seed, bucketKey{"acme", sub})%limiterShards == 0 {
			subjects = append(subjects, sub)
		}
	}
	for _, sub := range subjects {
		ok, _ := b.svc.Allow("acme", sub, 1)
		require.True(t, ok)
	}
	require.Equal(t, limiterShardCap, l.size())
}
