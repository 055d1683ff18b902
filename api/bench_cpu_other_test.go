//go:build !unix

package api_test

import (
	"testing"
	"time"
)

// processCPU is 0 where getrusage is missing: cpu-ns/op reads 0.
func processCPU(*testing.B) time.Duration { return 0 }
