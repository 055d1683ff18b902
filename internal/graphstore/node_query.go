package graphstore

import (
	"strings"
	"time"
)

// TimeRange is a half-open range of instants, [After, Before); a zero end
// leaves that side open.
type TimeRange struct {
	After, Before time.Time
}

// Contains reports whether t falls in the range.
func (r TimeRange) Contains(t time.Time) bool {
	return (r.After.IsZero() || !t.Before(r.After)) && (r.Before.IsZero() || t.Before(r.Before))
}

// containsFold reports whether s contains sub, ignoring case.
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
