package deadline

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Random sets, moves and removals against a map: the heap always agrees
// with it, and drains earliest first.
func TestHeapAgreesWithAMap(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		var h Heap[int]
		want := map[int]time.Time{}
		for range 1 + rng.IntN(400) {
			k := rng.IntN(100)
			switch rng.IntN(3) {
			case 0, 1:
				at := base.Add(time.Duration(rng.IntN(10_000)) * time.Millisecond)
				earliest := h.Set(k, at)
				want[k] = at
				first, firstAt, _ := h.Peek()
				require.Equal(t, first == k, earliest, "round %d", round)
				for _, other := range want {
					require.False(t, other.Before(firstAt), "round %d: Peek is the earliest", round)
				}
			case 2:
				_, had := want[k]
				require.Equal(t, had, h.Remove(k))
				delete(want, k)
			}
			require.Equal(t, len(want), h.Len())
		}
		for k, at := range want {
			got, ok := h.Get(k)
			require.True(t, ok)
			require.True(t, got.Equal(at))
		}
		var drained []time.Time
		for {
			k, at, ok := h.Pop()
			if !ok {
				break
			}
			require.True(t, want[k].Equal(at))
			delete(want, k)
			drained = append(drained, at)
		}
		require.Empty(t, want)
		require.True(t, slices.IsSortedFunc(drained, time.Time.Compare), "round %d drains in order", round)
	}
}

// Due returns the earliest due deadlines, earliest first, never one that is
// not due, and removes nothing.
func TestDueReturnsTheEarliestInOrder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var h Heap[int]
		n := 1 + rng.IntN(500)
		all := make([]time.Time, 0, n)
		for i := range n {
			at := base.Add(time.Duration(rng.IntN(10_000)) * time.Millisecond)
			h.Set(i, at)
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
		keys := h.Due(now, max)
		got := make([]time.Time, len(keys))
		for i, k := range keys {
			got[i], _ = h.Get(k)
		}
		require.Equal(t, want, got, "round %d: %d deadlines, max %d", round, n, max)
		require.Equal(t, n, h.Len(), "Due removes nothing")
	}
}

func TestEmpty(t *testing.T) {
	t.Parallel()
	var h Heap[string]
	_, _, ok := h.Peek()
	require.False(t, ok)
	_, _, ok = h.Pop()
	require.False(t, ok)
	require.False(t, h.Remove("x"))
	require.Empty(t, h.Due(base, 10))
	require.True(t, h.Set("x", base), "the only deadline is the earliest")
	require.False(t, h.Set("y", base.Add(time.Second)))
	require.True(t, h.Set("y", base.Add(-time.Second)), "moved to the front")
}
