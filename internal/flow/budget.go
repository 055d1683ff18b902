package flow

import (
	"regexp"
	"time"

	"github.com/tether-run/tether/internal/fault"
)

// MaxBudgetLimit bounds a budget's limit.
const MaxBudgetLimit = 1e15

var counterName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// CheckBudget reports a bad budget as a fault.Invalid naming its member.
// A counter is one a run reports in usage (tokens, cost_usd, or a name of
// its own): 1-128 characters of [A-Za-z0-9._:-]; anything else could never
// be reported, so a budget on it is refused.
func CheckBudget(usage string, limit float64, windowMS int64) error {
	if !counterName.MatchString(usage) {
		return fault.Invalidf("usage", "must name a usage counter (tokens, cost_usd, or 1-128 characters of [A-Za-z0-9._:-])")
	}
	if !(limit > 0 && limit <= MaxBudgetLimit) {
		return fault.Invalidf("limit", "must be a finite number above 0 and at most %g", MaxBudgetLimit)
	}
	if windowMS < 1000 || windowMS > 315360000000 {
		return fault.Invalidf("window_ms", "must be an integer from 1000 to 315360000000")
	}
	return nil
}

// Window is the fixed window of windowMS that holds now: [start, end).
func Window(windowMS int64, now time.Time) (start, end time.Time) {
	ms := now.UnixMilli()
	s := ms - ms%windowMS
	return time.UnixMilli(s).UTC(), time.UnixMilli(s + windowMS).UTC()
}
