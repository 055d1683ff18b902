package queuemetrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/indexes"
)

// sums are a history's totals over its ring.
func sums(h *histories, tenant, queue string) (created, completed uint32, ok bool) {
	el, _ := h.find(tenant, queue)
	if el == nil {
		return 0, 0, false
	}
	for _, c := range el.Value.(*historyEntry).ring {
		created += c.created
		completed += c.completed
	}
	return created, completed, true
}

// TestHistoriesKeepTenantsApart: whatever the caps, a tenant's queues are
// counted only with the same tenant's.
func TestHistoriesKeepTenantsApart(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := newHistories(2, 100)
	for range 7 {
		h.count("zebra", "q", indexes.QueueCreated, now)
	}
	h.count("zebra", "q", indexes.QueueCompleted, now)
	h.count("acme", "q", indexes.QueueCreated, now)
	c, d, ok := sums(h, "zebra", "q")
	require.True(t, ok)
	require.Equal(t, [2]uint32{7, 1}, [2]uint32{c, d})
	c, _, _ = sums(h, "acme", "q")
	require.EqualValues(t, 1, c)
	_, _, ok = sums(h, "empty", "q")
	require.False(t, ok, "a tenant that counted nothing has no history")

	// Past its cap a tenant's queues share its own "other", no one else's.
	h.count("acme", "q2", indexes.QueueCreated, now)
	h.count("acme", "q3", indexes.QueueCreated, now)
	h.count("acme", "q4", indexes.QueueCreated, now)
	el, k := h.find("acme", "q4")
	require.NotNil(t, el)
	require.Equal(t, historyKey{"acme", Other}, k)
	c, _, _ = sums(h, "acme", "q3")
	require.EqualValues(t, 2, c, "q3 and q4 share acme's other")
	_, k = h.find("zebra", "q9")
	require.Equal(t, historyKey{"zebra", "q9"}, k, "zebra is under its cap")
	require.Equal(t, map[string]int{"zebra": 1, "acme": 2}, h.own)
}

// TestHistoriesAreBounded: at most max histories; the least recently
// counted goes first, and an idle hour drops a history altogether.
func TestHistoriesAreBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := newHistories(1000, 3)
	for i := range 3 {
		h.count(fmt.Sprint("t", i), "q", indexes.QueueCreated, now)
	}
	h.count("t0", "q", indexes.QueueCreated, now) // t1 is now the least recent
	h.count("t3", "q", indexes.QueueCreated, now)
	require.Equal(t, 3, h.lru.Len())
	require.Len(t, h.byKey, 3)
	_, _, ok := sums(h, "t1", "q")
	require.False(t, ok, "the least recently counted was dropped")
	c, _, _ := sums(h, "t0", "q")
	require.EqualValues(t, 2, c)
	require.NotContains(t, h.own, "t1")

	// An hour later, counting anything drops every idle history.
	h.count("t9", "q", indexes.QueueCreated, now.Add(Minutes*time.Minute))
	require.Equal(t, 1, h.lru.Len())
	require.Equal(t, map[string]int{"t9": 1}, h.own)
}
