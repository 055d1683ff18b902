package blob

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/graphstore"
)

// The timed sweeps run on the service's clock between Start and Stop: each
// tells the test it ran (Swept), and collects exactly the blobs past their
// grace period.
func TestTimedSweepCollectsWhatIsPastItsGrace(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clocktest.New(t0)
	store, err := graphstore.Open(graphstore.Options{Dir: dataDir, Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	s, err := Open(Config{Dir: t.TempDir(), Store: store, Grace: time.Minute})
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	s.TestSignals.Swept.Init(t)
	ctx := context.Background()
	put := func(body string) string {
		b, _, err := s.Put(ctx, PutParams{Tenant: "acme", By: "alice", ContentType: "text/plain", Body: strings.NewReader(body)})
		require.NoError(t, err)
		return b.SHA256
	}
	exists := func(sha string) bool {
		_, _, err := s.Get("acme", sha)
		return err == nil
	}

	early := put("early") // t0
	clk.Advance(30 * time.Second)
	require.NoError(t, s.Start(ctx)) // the first sweep at t0+90s
	clk.Advance(15 * time.Second)
	late := put("late") // t0+45s

	clk.Advance(45 * time.Second)
	sw := s.TestSignals.Swept.Wait(t)
	require.NoError(t, sw.Err)
	require.Equal(t, 1, sw.Collected, "at t0+90s only the blob of t0 is past a minute's grace")
	require.False(t, exists(early))
	require.True(t, exists(late))

	clk.Advance(time.Minute)
	sw = s.TestSignals.Swept.Wait(t)
	require.NoError(t, sw.Err)
	require.Equal(t, 1, sw.Collected)
	require.False(t, exists(late))
}
