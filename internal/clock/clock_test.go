package clock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/clock/clocktest"
)

func TestDefaults(t *testing.T) {
	t.Parallel()
	fake := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	require.Equal(t, clock.Real{}, clock.OrReal(nil))
	require.Same(t, fake, clock.OrReal(fake))
	require.Same(t, fake, clock.Or(nil, fake), "nil takes the fallback")
	require.Equal(t, clock.Real{}, clock.Or(clock.Real{}, fake), "a clock given is kept")
}
