package cli

// How the client commands show times, durations and JSON to people.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// stamp is t as the API writes it: RFC 3339, UTC, milliseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// relative is "in 3m12s" for a time ahead and "3m12s ago" for one behind.
func relative(t time.Time) string {
	d := time.Until(t)
	switch {
	case d >= time.Second:
		return "in " + humanDuration(d)
	case d <= -time.Second:
		return humanDuration(-d) + " ago"
	default:
		return "now"
	}
}

// humanDuration is d to the second in at most two units: 850ms, 42s, 3m12s, 2h5m, 3d4h.
func humanDuration(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	d = d.Round(time.Second)
	units := [...]struct {
		name string
		size time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	for i, u := range units {
		if d < u.size {
			continue
		}
		s := fmt.Sprintf("%d%s", d/u.size, u.name)
		if i+1 < len(units) {
			if n := d % u.size / units[i+1].size; n > 0 {
				s += fmt.Sprintf("%d%s", n, units[i+1].name)
			}
		}
		return s
	}
	return "0s"
}

// relativeOrDash is a time for a table cell: relative, or "-" when there is none.
func relativeOrDash(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return relative(*t)
}

// orDash is *s, or "-" when it is nil or empty.
func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// compactJSON is v as one line of JSON, for a table cell ("-" for nothing).
func compactJSON(v any) string {
	switch m := v.(type) {
	case nil:
		return "-"
	case map[string]any:
		if len(m) == 0 {
			return "-"
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// counters is a usage map as "cost=0.3 tokens=1200", sorted by name.
func counters(u map[string]float64) string {
	if len(u) == 0 {
		return "-"
	}
	names := make([]string, 0, len(u))
	for k := range u {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s=%g", k, u[k])
	}
	return strings.Join(parts, " ")
}

func ptrTo[T any](v T) *T { return &v }
