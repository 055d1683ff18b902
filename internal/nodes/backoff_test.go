package nodes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

func backoff(initialMS, maxMS int64, factor float64) func(*nodes.NodeSpec) {
	return func(s *nodes.NodeSpec) {
		s.Backoff = &records.Backoff{InitialMS: initialMS, MaxMS: maxMS, Factor: factor}
	}
}

// retry fails c's run of id with attempts left and answers how long the
// node waits before it may run again.
func (b *bundle) retry(t *testing.T, c nodes.Caller, id string, in *time.Duration) time.Duration {
	t.Helper()
	n, err := b.nodes.Fail(context.Background(), nodes.FailParams{HolderParams: holder(c, id), Error: "try again", RetryIn: in})
	require.NoError(t, err)
	require.Equal(t, records.StatusQueued, n.Status)
	require.NotNil(t, n.RunAt)
	return n.RunAt.Sub(b.clk.Now())
}

// A failed run waits for its backoff before it may run again: the policy's
// delay for its attempt (initial × factor^(attempt-1), capped at max), with
// equal jitter (between half the delay and all of it). The node is not
// claimable before that instant on the clock, and is at it.
func TestRetryBackoffFollowsThePolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, spec("n", "q", maxAttempts(5), backoff(1000, 3000, 2)))
	for attempt, full := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
		require.Equal(t, "n", b.claimNext(t, nodes.ClaimNextParams{Caller: b.alice, Queue: "q"}), "attempt %d", attempt+1)
		wait := b.retry(t, b.alice, "n", nil)
		require.GreaterOrEqual(t, wait, full/2, "attempt %d", attempt+1)
		require.LessOrEqual(t, wait, full, "attempt %d", attempt+1)

		b.clk.Advance(wait - time.Millisecond)
		require.Empty(t, b.claimNext(t, nodes.ClaimNextParams{Caller: b.alice, Queue: "q"}), "before run_at, attempt %d", attempt+1)
		b.clk.Advance(time.Millisecond)
	}
	// The fifth failure has no attempt left: dead, no run_at.
	require.Equal(t, "n", b.claimNext(t, nodes.ClaimNextParams{Caller: b.alice, Queue: "q"}))
	n, err := b.nodes.Fail(context.Background(), nodes.FailParams{HolderParams: holder(b.alice, "n"), Error: "last"})
	require.NoError(t, err)
	require.Equal(t, records.StatusDead, n.Status)
	require.EqualValues(t, 5, n.Attempts)
}

// Jitter spreads nodes that fail together over [delay/2, delay], and does
// spread them.
func TestRetryBackoffJitterBounds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const count = 40
	var specs []nodes.NodeSpec
	for i := range count {
		specs = append(specs, spec(fmt.Sprintf("n%02d", i), "q", backoff(10_000, 10_000, 1)))
	}
	b.create(t, specs...)
	seen := map[time.Duration]bool{}
	for i := range count {
		id := fmt.Sprintf("n%02d", i)
		b.claim(t, b.alice, id)
		wait := b.retry(t, b.alice, id, nil)
		require.GreaterOrEqual(t, wait, 5*time.Second)
		require.LessOrEqual(t, wait, 10*time.Second)
		require.Zero(t, wait%time.Millisecond, "whole milliseconds")
		seen[wait] = true
	}
	require.Greater(t, len(seen), 1, "jitter made every delay the same")
}

// An explicit retry_in is taken exactly; a node without a backoff retries
// at once; a negative retry_in is refused and changes nothing.
func TestRetryInAndNoBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, spec("exact", "q", backoff(1000, 60_000, 2)), spec("plain", "p"))

	b.claim(t, b.alice, "exact")
	in := 7 * time.Second
	require.Equal(t, in, b.retry(t, b.alice, "exact", &in))

	b.claim(t, b.alice, "plain")
	n, err := b.nodes.Fail(context.Background(), nodes.FailParams{HolderParams: holder(b.alice, "plain"), Error: "x"})
	require.NoError(t, err)
	require.Equal(t, records.StatusQueued, n.Status)
	require.Equal(t, "plain", b.claimNext(t, nodes.ClaimNextParams{Caller: b.alice, Queue: "p"}))

	before := b.get(t, "plain")
	neg := -time.Second
	_, err = b.nodes.Fail(context.Background(), nodes.FailParams{HolderParams: holder(b.alice, "plain"), Error: "x", RetryIn: &neg})
	require.Error(t, err)
	after := b.get(t, "plain")
	require.Equal(t, records.StatusRunning, after.Status)
	require.Equal(t, before.Version, after.Version)
}
