package flowcheck

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The checker's self-test: hand-written histories, legal and illegal. The
// illegal ones are what the process tests exist to catch; the legal ones
// are what the uncertainty of client-observed calls allows, which the
// checker must never flag.

const origin = int64(1_700_000_000_000_000_000)

// at is an instant, in milliseconds from the origin.
func at(ms float64) int64 { return origin + int64(ms*1e6) }

// h builds a history; leases default to a long expiry.
type h struct{ ops []Op }

// grant records a lease of node (fence 1 unless given) granted by a call
// sent at call and answered at ret, expiring at exp (0: in an hour).
func (b *h) grant(node string, fence uint64, call, ret, exp float64, keys ...string) *h {
	if exp == 0 {
		exp = 3_600_000
	}
	b.ops = append(b.ops, Op{Kind: Grant, Node: node, Fence: fence, Keys: keys, Queue: "q", Call: at(call), Return: at(ret), Expires: at(exp)})
	return b
}

func (b *h) renew(node string, fence uint64, call, ret, exp float64) *h {
	b.ops = append(b.ops, Op{Kind: Renew, Node: node, Fence: fence, Call: at(call), Return: at(ret), Expires: at(exp)})
	return b
}

func (b *h) end(node string, fence uint64, call float64) *h {
	b.ops = append(b.ops, Op{Kind: End, Node: node, Fence: fence, Call: at(call)})
	return b
}

func running(limits map[string]int) Config {
	return Config{Limits: Limits{MaxRunning: limits}, ClockSlack: DefaultClockSlack}
}

func rated(keys map[string]Rate, queues map[string]Rate) Config {
	return Config{Limits: Limits{KeyRates: keys, QueueRates: queues}, ClockSlack: DefaultClockSlack}
}

func TestRunningOverLimitIsFound(t *testing.T) {
	t.Parallel()
	b := (&h{}).grant("a", 1, 0, 1, 0, "k").grant("b", 1, 2, 3, 0, "k").end("a", 1, 10)
	r := Check(running(map[string]int{"k": 1}), b.ops)
	require.Len(t, r.Violations, 1, "%v", r)
	v := r.Violations[0]
	require.Equal(t, RuleRunning, v.Rule)
	require.Equal(t, "k", v.Bucket)
	require.Equal(t, 2, v.Count)
	require.Equal(t, at(3), v.From, "the violation is at the second grant's answer")
	require.Equal(t, []LeaseID{{"a", 1}, {"b", 1}}, v.Leases)
	require.Contains(t, r.String(), "2 leases surely running at once")
}

func TestRunningHandOverWithinUncertaintyIsLegal(t *testing.T) {
	t.Parallel()
	// a's release is sent at 5 and answered at 7; b's claim was sent at 4
	// and answered at 6. Both may have been live from 4 to 7, but the
	// server may have released a at 5 and granted b at 5.5: nothing is
	// proven.
	b := (&h{}).grant("a", 1, 0, 1, 0, "k").end("a", 1, 5).grant("b", 1, 4, 6, 0, "k")
	r := Check(running(map[string]int{"k": 1}), b.ops)
	require.True(t, r.OK(), "%v", r)
	require.Equal(t, 1, r.AtLimit, "the key was at its limit")
}

func TestRunningTouchingIntervalsAreLegal(t *testing.T) {
	t.Parallel()
	// a's end is sent at the very nanosecond b's grant is answered.
	b := (&h{}).grant("a", 1, 0, 1, 0, "k").end("a", 1, 5).grant("b", 1, 2, 5, 0, "k")
	require.True(t, Check(running(map[string]int{"k": 1}), b.ops).OK())
	// One nanosecond later, the release was sent after b surely ran.
	b.ops[1].Call++
	require.False(t, Check(running(map[string]int{"k": 1}), b.ops).OK())
}

func TestRunningExpiryWithinSlackIsLegal(t *testing.T) {
	t.Parallel()
	cfg := running(map[string]int{"k": 1})
	// a was told it expires at 100; b is granted by 96 (after 100 − slack).
	legal := (&h{}).grant("a", 1, 0, 1, 100, "k").grant("b", 1, 90, 96, 0, "k")
	require.True(t, Check(cfg, legal.ops).OK())
	// b granted by 90, while a surely ran.
	illegal := (&h{}).grant("a", 1, 0, 1, 100, "k").grant("b", 1, 80, 90, 0, "k")
	require.False(t, Check(cfg, illegal.ops).OK())
}

func TestRunningRenewalExtendsTheLease(t *testing.T) {
	t.Parallel()
	cfg := running(map[string]int{"k": 1})
	for name, b := range map[string]*h{
		"renew":    (&h{}).grant("a", 1, 0, 1, 100, "k").renew("a", 1, 50, 51, 300),
		"re-claim": (&h{}).grant("a", 1, 0, 1, 100, "k").grant("a", 1, 50, 51, 300, "k"),
	} {
		b.grant("b", 1, 150, 200, 0, "k")
		r := Check(cfg, b.ops)
		require.Len(t, r.Violations, 1, "%s: %v", name, r)
		require.Equal(t, 2, r.Leases, "%s: a re-claim is the same lease", name)
	}
}

func TestRunningUnknownEndEndsTheSureInterval(t *testing.T) {
	t.Parallel()
	// a's complete got no answer: it may have acted at once.
	b := (&h{}).grant("a", 1, 0, 1, 0, "k").end("a", 1, 50).grant("b", 1, 55, 60, 0, "k")
	require.True(t, Check(running(map[string]int{"k": 1}), b.ops).OK())
}

func TestRunningUnseenGrantsCountForNothing(t *testing.T) {
	t.Parallel()
	// Renewals and ends of a lease whose grant went unanswered prove
	// nothing about it.
	b := (&h{}).grant("a", 1, 0, 1, 0, "k").renew("x", 3, 2, 3, 1000).end("x", 3, 900)
	r := Check(running(map[string]int{"k": 1}), b.ops)
	require.True(t, r.OK())
	require.Equal(t, 1, r.Leases)
}

func TestRunningPrefixLimitBoundsEachKey(t *testing.T) {
	t.Parallel()
	cfg := running(map[string]int{"repo:*": 1})
	distinct := (&h{}).grant("a", 1, 0, 1, 0, "repo:a").grant("b", 1, 0, 1, 0, "repo:b").grant("c", 1, 0, 1, 0, "other")
	r := Check(cfg, distinct.ops)
	require.True(t, r.OK(), "%v", r)
	require.Equal(t, 2, r.LimitedKeys, "other matches no limit")
	same := (&h{}).grant("a", 1, 0, 1, 0, "repo:a").grant("b", 1, 0, 1, 0, "repo:a")
	r = Check(cfg, same.ops)
	require.Len(t, r.Violations, 1)
	require.Equal(t, "repo:*", r.Violations[0].Pattern)
	require.Equal(t, "repo:a", r.Violations[0].Bucket)
}

func TestRunningLeastLimitApplies(t *testing.T) {
	t.Parallel()
	cfg := running(map[string]int{"repo:*": 2, "repo:a": 1})
	b := (&h{}).grant("a", 1, 0, 1, 0, "repo:a").grant("b", 1, 0, 1, 0, "repo:a")
	r := Check(cfg, b.ops)
	require.Len(t, r.Violations, 1)
	require.Equal(t, "repo:a", r.Violations[0].Pattern)
	require.Equal(t, 1.0, r.Violations[0].Bound)
}

func TestRunningEveryKeyOfANodeCounts(t *testing.T) {
	t.Parallel()
	cfg := running(map[string]int{"x": 5, "y": 1})
	b := (&h{}).grant("a", 1, 0, 1, 0, "x", "y").grant("b", 1, 0, 1, 0, "y", "z")
	r := Check(cfg, b.ops)
	require.Len(t, r.Violations, 1)
	require.Equal(t, "y", r.Violations[0].Bucket)
}

func TestRunningLaterLeaseOfOneNodeIsAnother(t *testing.T) {
	t.Parallel()
	// The node's lease expired and was granted again with the next fence.
	cfg := running(map[string]int{"k": 1})
	legal := (&h{}).grant("a", 1, 0, 1, 100, "k").grant("a", 2, 100, 110, 0, "k")
	require.True(t, Check(cfg, legal.ops).OK())
	illegal := (&h{}).grant("a", 1, 0, 1, 100, "k").grant("a", 2, 40, 50, 0, "k")
	require.False(t, Check(cfg, illegal.ops).OK())
}

// grantsEvery makes n grants, the i-th sent at start + i × every ms and
// answered 1 ms later.
func grantsEvery(b *h, n int, start, every float64, keys ...string) *h {
	for i := range n {
		c := start + float64(i)*every
		b.grant("n"+string(rune('a'+i)), 1, c, c+1, 0, keys...)
	}
	return b
}

func TestRateBurstOverIsFound(t *testing.T) {
	t.Parallel()
	cfg := rated(map[string]Rate{"k": {PerSecond: 1, Burst: 2}}, nil)
	r := Check(cfg, grantsEvery(&h{}, 3, 0, 30, "k").ops)
	require.Len(t, r.Violations, 1, "%v", r)
	v := r.Violations[0]
	require.Equal(t, RuleRate, v.Rule)
	require.Equal(t, 3, v.Count)
	require.Equal(t, at(0), v.From)
	require.Equal(t, at(61), v.To)
	require.Len(t, v.Leases, 3)
}

func TestRateSpreadGrantsAreLegal(t *testing.T) {
	t.Parallel()
	cfg := rated(map[string]Rate{"k": {PerSecond: 1, Burst: 2}}, nil)
	r := Check(cfg, grantsEvery(&h{}, 10, 0, 1000, "k").ops)
	require.True(t, r.OK(), "%v", r)
	require.Equal(t, 1, r.RateBuckets)
}

func TestRateExactlyAtTheBoundIsLegal(t *testing.T) {
	t.Parallel()
	cfg := rated(map[string]Rate{"k": {PerSecond: 10, Burst: 1}}, nil)
	// A grant every 100 ms at 10/s with a burst of 1: full, never over.
	b := grantsEvery(&h{}, 20, 0, 100, "k")
	r := Check(cfg, b.ops)
	require.True(t, r.OK(), "%v", r)
	require.Greater(t, r.FullestRate, 0.95, "the bucket ran full")
	// One grant 10 ms early: eleven within 991 ms, where 10/s allows
	// 10.96 (and two within 91 ms, where it allows 1.96); the earliest
	// window is reported.
	b.ops[10].Call, b.ops[10].Return = at(990), at(991)
	r = Check(cfg, b.ops)
	require.Len(t, r.Violations, 1, "%v", r)
	require.Equal(t, at(0), r.Violations[0].From)
	require.Equal(t, at(991), r.Violations[0].To)
	require.Equal(t, 11, r.Violations[0].Count)
}

func TestRateUncertainGrantsAreLegalWhenAPlacementFits(t *testing.T) {
	t.Parallel()
	cfg := rated(map[string]Rate{"k": {PerSecond: 1, Burst: 1}}, nil)
	// a may have been granted at 0 and b at 1500: nothing proven.
	b := (&h{}).grant("a", 1, 0, 2000, 0, "k").grant("b", 1, 1500, 1600, 0, "k")
	require.True(t, Check(cfg, b.ops).OK())
	// Three grants within one second, wherever they fell in it, are more
	// than 1/s with a burst of 1 allows.
	b = (&h{}).grant("a", 1, 0, 1000, 0, "k").grant("b", 1, 0, 1000, 0, "k").grant("c", 1, 0, 1000, 0, "k")
	require.False(t, Check(cfg, b.ops).OK())
}

func TestRatePrefixBucketsAreDistinct(t *testing.T) {
	t.Parallel()
	cfg := rated(map[string]Rate{"p:*": {PerSecond: 1, Burst: 1}}, nil)
	b := (&h{}).grant("a", 1, 0, 1, 0, "p:1").grant("b", 1, 0, 1, 0, "p:2")
	r := Check(cfg, b.ops)
	require.True(t, r.OK(), "%v", r)
	require.Equal(t, 2, r.RateBuckets)
	b.grant("c", 1, 0, 1, 0, "p:1")
	require.False(t, Check(cfg, b.ops).OK())
}

func TestRateQueueBucket(t *testing.T) {
	t.Parallel()
	cfg := rated(nil, map[string]Rate{"q": {PerSecond: 2, Burst: 2}})
	r := Check(cfg, grantsEvery(&h{}, 4, 0, 10).ops)
	require.Len(t, r.Violations, 1, "%v", r)
	require.Equal(t, "queue q", r.Violations[0].Bucket)
	require.True(t, Check(cfg, grantsEvery(&h{}, 4, 0, 500).ops).OK())
}

func TestRateRenewalIsNoGrant(t *testing.T) {
	t.Parallel()
	cfg := rated(map[string]Rate{"k": {PerSecond: 1, Burst: 1}}, nil)
	b := (&h{}).grant("a", 1, 0, 1, 0, "k").grant("a", 1, 10, 11, 0, "k").grant("a", 1, 20, 21, 0, "k")
	require.True(t, Check(cfg, b.ops).OK())
}

func TestRateReclaimOfAnUnseenGrantIsNoGrant(t *testing.T) {
	t.Parallel()
	cfg := rated(map[string]Rate{"k": {PerSecond: 1, Burst: 1}}, nil)
	// b and c were granted earlier by calls without an answer; their
	// holders' re-claims place nothing in the window.
	b := (&h{}).grant("a", 1, 0, 1, 0, "k").grant("b", 1, 10, 11, 0, "k").grant("c", 1, 20, 21, 0, "k")
	b.ops[1].Renewed, b.ops[2].Renewed = true, true
	r := Check(cfg, b.ops)
	require.True(t, r.OK(), "%v", r)
	// They still ran: for max_running they count from the re-claim's answer.
	r = Check(running(map[string]int{"k": 2}), b.ops)
	require.Len(t, r.Violations, 1)
	require.Equal(t, at(21), r.Violations[0].From)
}

func TestCheckIsPure(t *testing.T) {
	t.Parallel()
	cfg := Config{Limits: Limits{MaxRunning: map[string]int{"k": 1}, KeyRates: map[string]Rate{"k": {PerSecond: 1, Burst: 1}}}, ClockSlack: time.Millisecond}
	b := grantsEvery(&h{}, 5, 0, 10, "k")
	first := Check(cfg, b.ops)
	require.Equal(t, first, Check(cfg, b.ops))
	require.Len(t, first.Violations, 2)
}
