package flow

import (
	"math"

	"github.com/tether-run/tether/internal/fault"
)

// The bounds of a start rate and a limit.
const (
	MinPerSecond = 0.001
	MaxPerSecond = 1_000_000
	MaxBurst     = 1_000_000
	MaxLimit     = 1_000_000
)

// Rate is a start rate: a token bucket on lease grants.
type Rate struct {
	PerSecond float64
	Burst     int64
}

// Check reports a rate outside its bounds as a fault.Invalid naming
// field.per_second or field.burst.
func (r Rate) Check(field string) error {
	if math.IsNaN(r.PerSecond) || math.IsInf(r.PerSecond, 0) || r.PerSecond < MinPerSecond || r.PerSecond > MaxPerSecond {
		return fault.Invalidf(field+".per_second", "must be a finite number from %g to %d", MinPerSecond, MaxPerSecond)
	}
	if r.Burst < 1 || r.Burst > MaxBurst {
		return fault.Invalidf(field+".burst", "must be an integer from 1 to %d", MaxBurst)
	}
	return nil
}

// CheckLimit reports a limit on live leases outside [1, MaxLimit].
func CheckLimit(field string, n int64) error {
	if n < 1 || n > MaxLimit {
		return fault.Invalidf(field, "must be an integer from 1 to %d", MaxLimit)
	}
	return nil
}
