package serve

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPauseGCRestoresTheSettings: while a rebuild runs the proportional GC
// is off and a memory limit guards the heap; when the last of two
// overlapping pauses ends, GOGC and the limit are what they were.
func TestPauseGCRestoresTheSettings(t *testing.T) {
	percent := debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	limit := debug.SetMemoryLimit(-1)

	first := pauseGC()
	second := pauseGC()
	require.Equal(t, -1, debug.SetGCPercent(-1), "GOGC while paused")
	guard := debug.SetMemoryLimit(-1)
	require.Less(t, guard, int64(math.MaxInt64), "a memory limit guards the heap while paused")
	first()
	first() // a second call changes nothing
	require.Equal(t, -1, debug.SetGCPercent(-1), "GOGC while the second pause holds")
	second()
	require.Equal(t, percent, debug.SetGCPercent(percent), "GOGC after")
	require.Equal(t, limit, debug.SetMemoryLimit(-1), "memory limit after")
}
