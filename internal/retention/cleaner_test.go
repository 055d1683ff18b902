package retention

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/graphstore"
)

// The cleaner passes once per Interval of its clock, and Stop waits for it.
func TestCleanerPassesOnItsClock(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store, err := graphstore.Open(graphstore.Options{Dir: t.TempDir(), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	c := New(Config{
		Store: store, Clock: clk, Interval: time.Minute,
		Retention: func(context.Context, string) (time.Duration, error) { return time.Hour, nil },
	})
	c.TestSignals.Passed.Init(t)
	require.NoError(t, c.Start(context.Background()))
	<-c.Started()

	for want := int64(1); want <= 2; want++ {
		clk.Advance(time.Minute)
		require.NoError(t, c.TestSignals.Passed.Wait(t))
		require.Equal(t, want, c.Stats().Passes.Load())
	}
	c.Stop()
	<-c.Stopped()
	c.Stop() // idempotent
}
