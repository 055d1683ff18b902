package testsignal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOffUntilInit(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	s.Signal(1) // off: dropped, never blocks
	s.Init(t)
	s.Signal(2)
	s.Signal(3)
	require.Equal(t, 2, s.Wait(t))
	s.Signal(4)
	require.Equal(t, 4, s.WaitFor(t, func(v int) bool { return v%2 == 0 }), "3 is discarded")
}

func TestSignalNeverBlocks(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	s.Init(t)
	for i := range buffer {
		s.Signal(i)
	}
	require.False(t, s.overflow.Load())
	s.Signal(buffer) // one too many: dropped and remembered
	require.True(t, s.overflow.Load())
	s.overflow.Store(false) // this test overflowed on purpose
}
