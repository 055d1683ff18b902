package queuemetrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLabelsStayWithinTheCaps: first come first served, kept once given,
// and everything past a cap shares "other".
func TestLabelsStayWithinTheCaps(t *testing.T) {
	t.Parallel()
	l := newLabeller(Limits{MaxTenants: 2, MaxQueues: 2})
	require.Equal(t, labelKey{"a", "q1"}, l.label("a", "q1"))
	require.Equal(t, labelKey{"a", "q2"}, l.label("a", "q2"))
	require.Equal(t, labelKey{"a", Other}, l.label("a", "q3"), "a's third queue")
	require.Equal(t, labelKey{"b", "q1"}, l.label("b", "q1"), "caps are per tenant")
	require.Equal(t, labelKey{Other, Other}, l.label("c", "q1"), "the third tenant")
	require.Equal(t, labelKey{"a", "q1"}, l.label("a", "q1"), "a value once given is kept")
	require.Equal(t, labelKey{"a", Other}, l.label("a", "q3"), "and so is other")

	d := newLabeller(Limits{})
	require.Equal(t, Limits{MaxTenants: DefaultMaxTenants, MaxQueues: DefaultMaxQueues}, d.lim)
}
