package indexes

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/records"
)

func TestLabelSetsKeepTheirLabels(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300) // a length of two varint bytes
	for _, labels := range [][]string{nil, {"a"}, {"gpu", "eu"}, {"with\x00nul", "", long, "é"}} {
		set := labelSetOf(labels)
		require.Equal(t, labels, set.labelList())
		require.Equal(t, set, labelSetOf(append([]string(nil), labels...)), "equal labels intern to one atom")
		for _, l := range labels {
			require.True(t, set.hasLabel(l), "%q", l)
		}
		require.False(t, set.hasLabel("absent"))
	}
	require.NotEqual(t, labelSetOf([]string{"ab"}), labelSetOf([]string{"a", "b"}))
	require.Equal(t, atom{}, atomOf(""))
	require.Equal(t, "", atom{}.String())
	require.Equal(t, "q", atomOf("q").String())
}

func TestStatusCodesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range records.Statuses() {
		c := codeOf(s)
		require.NotZero(t, c, s)
		require.Equal(t, s, c.Status())
		require.Equal(t, s.Terminal(), c.Terminal())
	}
	require.Equal(t, codeQueued, codeOf(records.StatusQueued))
	require.Equal(t, codeRunning, codeOf(records.StatusRunning))
}
