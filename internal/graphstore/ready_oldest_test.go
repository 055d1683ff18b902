package graphstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The oldest claimable node of a queue is found across priority bands and
// targets (the mirror keeps no age order of its own): with the oldest in the
// first band, then in the last band, then in a target's claim index.
func TestReadyStatsOldestAcrossBandsAndTargets(t *testing.T) {
	t.Parallel()
	s, clk := setup(t)
	start := clk.Now()
	at := func(d time.Duration) time.Time { return start.Add(d).UTC() }

	insert(t, s, newNode("acme", "high-new", 9)) // created at start
	clk.Advance(time.Second)
	insert(t, s, newNode("acme", "high-newer", 9))
	ready, oldest := s.ReadyStats("acme", "q")
	require.Equal(t, 2, ready)
	require.Equal(t, at(0), oldest)

	clk.Advance(time.Second)
	insert(t, s, newNode("acme", "low", -3)) // created at 2s
	clk.Advance(time.Second)
	targeted := newNode("acme", "targeted", 0) // created at 3s
	targeted.Target = "w1"
	insert(t, s, targeted)
	ready, oldest = s.ReadyStats("acme", "q")
	require.Equal(t, 4, ready)
	require.Equal(t, at(0), oldest)

	// Without the band-9 nodes the oldest is the low-priority one, in a band
	// after the targeted one's in claim order.
	remove(t, s, "high-new", "high-newer")
	ready, oldest = s.ReadyStats("acme", "q")
	require.Equal(t, 2, ready)
	require.Equal(t, at(2*time.Second), oldest)
	stats := s.QueueStats("acme")
	require.Len(t, stats, 1)
	require.Equal(t, at(2*time.Second), stats[0].OldestReady)

	// Only the targeted one left: its own claim index serves it.
	remove(t, s, "low")
	ready, oldest = s.ReadyStats("acme", "q")
	require.Equal(t, 1, ready)
	require.Equal(t, at(3*time.Second), oldest)

	remove(t, s, "targeted")
	ready, oldest = s.ReadyStats("acme", "q")
	require.Zero(t, ready)
	require.True(t, oldest.IsZero())
}

func remove(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	require.NoError(t, s.Update(t.Context(), func(tx *Tx) error {
		for _, id := range ids {
			n, err := tx.NodeGet("acme", id)
			if err != nil {
				return err
			}
			if err := tx.NodeDelete(n, "head"); err != nil {
				return err
			}
		}
		return nil
	}))
}
