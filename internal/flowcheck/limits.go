package flowcheck

import (
	"strings"
	"time"
)

// Rate is a token bucket: PerSecond tokens added each second, up to Burst.
type Rate struct {
	PerSecond float64 `json:"per_second"`
	Burst     float64 `json:"burst"`
}

// Limits are the flow-control settings a history ran under, fixed for its
// whole length. A key ending in "*" is a prefix: it bounds each distinct
// key that starts with what comes before the "*", each on its own.
type Limits struct {
	// MaxRunning bounds the leases running at once with a key.
	MaxRunning map[string]int `json:"max_running,omitempty"`
	// KeyRates bound the grants of leases of nodes carrying a key.
	KeyRates map[string]Rate `json:"key_rates,omitempty"`
	// QueueRates bound the grants of leases of nodes of a queue.
	QueueRates map[string]Rate `json:"queue_rates,omitempty"`
}

// Config is what Check needs beside the history.
type Config struct {
	Limits Limits
	// ClockSlack is how far a server's reading of the clock, and the
	// millisecond rounding of the instants it names, may stray from the
	// recorder's.
	ClockSlack time.Duration
}

// DefaultClockSlack is ClockSlack for servers on the recorder's machine:
// a told expiry is rounded to the millisecond, and a server reads the
// clock a little before or after it acts.
const DefaultClockSlack = 5 * time.Millisecond

// runningLimit is the least max_running that applies to key, and whether
// any does.
func (l Limits) runningLimit(key string) (int, bool) {
	least, found := 0, false
	for pattern, n := range l.MaxRunning {
		if matches(pattern, key) && (!found || n < least) {
			least, found = n, true
		}
	}
	return least, found
}

// keyRates are the rates that apply to key, by the pattern that set each.
func (l Limits) keyRates(key string) map[string]Rate {
	var out map[string]Rate
	for pattern, r := range l.KeyRates {
		if matches(pattern, key) {
			if out == nil {
				out = map[string]Rate{}
			}
			out[pattern] = r
		}
	}
	return out
}

// matches says whether a limit set on pattern applies to key.
func matches(pattern, key string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(key, prefix)
	}
	return pattern == key
}
