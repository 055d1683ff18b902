//go:build unix

package api_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// processCPU is the CPU time (user and system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
