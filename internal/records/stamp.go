package records

import "time"

// StampLayout is the one form of a timestamp Tether shows: UTC, to the
// millisecond, as the API's time fields.
const StampLayout = "2006-01-02T15:04:05.000Z07:00"

// Stamp is t in StampLayout, for event data and messages, so that a time in
// an event reads the same as the field it came from.
func Stamp(t time.Time) string { return t.UTC().Format(StampLayout) }
