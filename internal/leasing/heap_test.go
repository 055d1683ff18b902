package leasing

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// due returns the earliest due deadlines, earliest first, and never one
// that is not due.
func TestDueReturnsTheEarliestDeadlinesInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 50 {
		d := newDeadlines()
		n := 1 + rng.IntN(500)
		all := make([]time.Time, 0, n)
		for i := range n {
			at := base.Add(time.Duration(rng.IntN(10_000)) * time.Millisecond)
			d.set(nodeRef{"t", fmt.Sprint(i)}, at)
			all = append(all, at)
		}
		now := base.Add(time.Duration(rng.IntN(10_000)) * time.Millisecond)
		max := 1 + rng.IntN(n)
		slices.SortFunc(all, time.Time.Compare)
		want := []time.Time{}
		for _, at := range all {
			if !at.After(now) && len(want) < max {
				want = append(want, at)
			}
		}
		refs := d.due(now, max)
		got := make([]time.Time, len(refs))
		for i, r := range refs {
			got[i], _ = d.h.Get(r)
		}
		require.Equal(t, want, got, "round %d: %d deadlines, max %d", round, n, max)
	}
}
