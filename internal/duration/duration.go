package duration

import (
	"strings"
	"time"

	"github.com/tether-run/tether/internal/fault"
)

// MaxMS is the longest duration any field may hold: ten years of 365 days.
const MaxMS int64 = 10 * 365 * 24 * 3600 * 1000 // 315360000000

// MaxWaitMS is the longest long poll (wait_ms).
const MaxWaitMS int64 = 60000

// Range is the inclusive range of a millisecond field.
type Range struct {
	Min, Max int64
}

// Of returns the range of the field named name (a JSON member name, or a
// path whose last element is one).
func Of(name string) Range {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	switch name {
	case "ttl_ms", "ms", "timeout_ms":
		return Range{Min: 1, Max: MaxMS}
	case "wait_ms":
		return Range{Min: 0, Max: MaxWaitMS}
	case "claim_ttl_default_ms", "claim_ttl_max_ms", "window_ms":
		return Range{Min: 1000, Max: MaxMS}
	}
	// delay_ms, retry_in_ms, initial_ms, max_ms, and any field not listed.
	return Range{Min: 0, Max: MaxMS}
}

// IsField reports whether a JSON member name is a millisecond field.
func IsField(name string) bool { return name == "ms" || strings.HasSuffix(name, "_ms") }

// Check returns a *fault.Invalid naming field when v is outside its range.
func Check(field string, v int64) error {
	r := Of(field)
	if v < r.Min || v > r.Max {
		return r.Invalid(field)
	}
	return nil
}

// Invalid is the error for a value of field outside r (or not an integer).
func (r Range) Invalid(field string) error {
	return fault.Invalidf(field, "must be an integer from %d to %d (milliseconds)", r.Min, r.Max)
}

// FromMS converts milliseconds to a time.Duration, saturating at 0 and MaxMS
// so that no value can wrap.
func FromMS(ms int64) time.Duration {
	return time.Duration(min(max(ms, 0), MaxMS)) * time.Millisecond
}
