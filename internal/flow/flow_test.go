package flow

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A bucket starts empty, earns per_second tokens a second, keeps at most
// the burst however long it idles, and says how long until the next token.
func TestBucketStartsEmptyAndNeverHoldsMoreThanTheBurst(t *testing.T) {
	r := Rate{PerSecond: 2, Burst: 3}
	t0 := time.Unix(1_000_000, 0)
	var b Bucket
	require.Equal(t, 500*time.Millisecond, b.Wait(r, t0), "empty at first use: half a second to the first token")
	require.Zero(t, b.Wait(r, t0.Add(500*time.Millisecond)))
	b.Take()

	// An hour idle earns the burst, no more.
	later := t0.Add(time.Hour)
	granted := 0
	for b.Wait(r, later) == 0 {
		b.Take()
		granted++
	}
	require.Equal(t, 3, granted)
	require.Equal(t, 500*time.Millisecond, b.Wait(r, later))

	// A clock that steps back earns nothing and takes nothing back.
	require.Equal(t, 500*time.Millisecond, b.Wait(r, later.Add(-time.Minute)))
}

// Over any stretch, grants are at most rate x stretch + burst.
func TestBucketGrantsWithinRateTimesWindowPlusBurst(t *testing.T) {
	r := Rate{PerSecond: 5, Burst: 4}
	t0 := time.Unix(2_000_000, 0)
	var b Bucket
	b.Wait(r, t0)
	b.tokens = float64(r.Burst) // full, as after a long idle
	granted := 0
	for ms := 0; ms <= 10_000; ms++ {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		for b.Wait(r, now) == 0 {
			b.Take()
			granted++
		}
	}
	bound := int(r.PerSecond*10) + int(r.Burst)
	require.LessOrEqual(t, granted, bound)
	require.GreaterOrEqual(t, granted, bound-1, "a busy bucket grants its rate")
}

func TestWindowIsFixedAndHoldsNow(t *testing.T) {
	now := time.UnixMilli(7_200_000 + 1234)
	start, end := Window(3_600_000, now)
	require.Equal(t, time.UnixMilli(7_200_000).UTC(), start)
	require.Equal(t, time.UnixMilli(10_800_000).UTC(), end)
	s2, _ := Window(3_600_000, end)
	require.Equal(t, end, s2, "the next window starts where this one ends")
}

func TestBadLimitsRatesAndBudgetsNameTheirField(t *testing.T) {
	for _, r := range []Rate{{PerSecond: 0, Burst: 1}, {PerSecond: math.NaN(), Burst: 1}, {PerSecond: math.Inf(1), Burst: 1}, {PerSecond: MaxPerSecond * 2, Burst: 1}} {
		require.ErrorContains(t, r.Check("rate"), "rate.per_second")
	}
	for _, burst := range []int64{0, -1, MaxBurst + 1} {
		require.ErrorContains(t, Rate{PerSecond: 1, Burst: burst}.Check("rate"), "rate.burst")
	}
	require.NoError(t, Rate{PerSecond: 0.5, Burst: 1}.Check("rate"))
	for _, n := range []int64{0, -1, MaxLimit + 1} {
		require.ErrorContains(t, CheckLimit("max_running", n), "max_running")
	}
	require.ErrorContains(t, CheckBudget("to kens", 1, 1000), "usage")
	require.ErrorContains(t, CheckBudget("tokens", 0, 1000), "limit")
	require.ErrorContains(t, CheckBudget("tokens", math.Inf(1), 1000), "limit")
	require.ErrorContains(t, CheckBudget("tokens", 1, 999), "window_ms")
	require.NoError(t, CheckBudget("cost_usd", 12.5, 3_600_000))
}

func TestKeysAreBoundedAndDeduplicated(t *testing.T) {
	keys, err := ValidKeys([]string{"repo:a", "provider:x", "repo:a"}, "concurrency_keys")
	require.NoError(t, err)
	require.Equal(t, []string{"repo:a", "provider:x"}, keys)

	nine := strings.Split("a b c d e f g h i", " ")
	_, err = ValidKeys(nine, "concurrency_keys")
	require.ErrorContains(t, err, "at most 8")
	for _, bad := range []string{"", strings.Repeat("k", MaxKeyBytes+1), "tab\there", "bad\xff", "repo:*"} {
		_, err := ValidKeys([]string{"ok", bad}, "nodes[2].concurrency_keys")
		require.ErrorContains(t, err, "nodes[2].concurrency_keys[1]", "%q", bad)
	}
	require.True(t, IsPrefix("repo:*"))
	require.Equal(t, "repo:", PrefixOf("repo:*"))
}
