package schedule

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
)

func mustTiming(t *testing.T, expr, zone string) timing {
	t.Helper()
	tm, err := parseTiming(expr, nil, zone)
	require.NoError(t, err)
	return tm
}

// fires lists the fire instants of tm after from, up to n of them.
func fires(tm timing, from time.Time, n int) []time.Time {
	var out []time.Time
	for t := from; len(out) < n; {
		t = tm.next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestCronFields(t *testing.T) {
	t.Parallel()
	from := utc("2026-01-01T00:00:00Z")
	require.Equal(t, []time.Time{utc("2026-01-01T00:05:00Z"), utc("2026-01-01T00:10:00Z")},
		fires(mustTiming(t, "*/5 * * * *", ""), from, 2))
	require.Equal(t, []time.Time{utc("2026-01-01T00:00:30Z"), utc("2026-01-01T00:01:30Z")},
		fires(mustTiming(t, "30 * * * * *", "UTC"), from, 2), "a leading seconds field")
	require.Equal(t, []time.Time{utc("2026-01-01T01:00:00Z"), utc("2026-01-01T02:00:00Z")},
		fires(mustTiming(t, "@hourly", ""), from, 2))
	require.Equal(t, []time.Time{utc("2026-01-02T00:00:00Z")}, fires(mustTiming(t, "@daily", ""), from, 1))
	// @every counts from the Unix epoch, so it is the same after a restart.
	require.Equal(t, []time.Time{utc("2026-01-01T00:01:30Z"), utc("2026-01-01T00:03:00Z")},
		fires(mustTiming(t, "@every 90s", ""), from, 2))
	require.Equal(t, []time.Time{utc("2026-01-01T00:01:30Z")},
		fires(mustTiming(t, "@every 90s", ""), utc("2026-01-01T00:00:00.5Z"), 1))
	// In a zone: 09:00 Berlin is 08:00 UTC in winter.
	require.Equal(t, []time.Time{utc("2026-01-01T08:00:00Z")}, fires(mustTiming(t, "0 9 * * *", "Europe/Berlin"), from, 1))
}

func TestBadTimingsAreInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ expr, zone, field string }{
		{"", "", "cron"},
		{"* * *", "", "cron"},
		{"61 * * * *", "", "cron"},
		{"* * * * * * *", "", "cron"},
		{"@fortnightly", "", "cron"},
		{"@every 0s", "", "cron"},
		{"@every -5s", "", "cron"},
		{"@every 1500ms", "", "cron"},
		{"@every soon", "", "cron"},
		{"TZ=UTC * * * * *", "", "cron"},
		{"CRON_TZ=UTC", "", "cron"},
		{"*/0 * * * *", "", "cron"},
		{"* * * * *", "Mars/Olympus", "timezone"},
		{"* * * * *", "Local", "timezone"},
		{"* * * * *", "../../etc/passwd", "timezone"},
	} {
		_, err := parseTiming(tc.expr, nil, tc.zone)
		var inv *fault.Invalid
		require.ErrorAs(t, err, &inv, "%q in %q", tc.expr, tc.zone)
		require.Equal(t, tc.field, inv.Field, "%q in %q", tc.expr, tc.zone)
	}
	// February 30th parses but never fires.
	require.True(t, mustTiming(t, "0 0 30 2 *", "").next(utc("2026-01-01T00:00:00Z")).IsZero())
}

// The spring-forward gap: in New York on 2026-03-08 clocks jump from 02:00
// EST to 03:00 EDT. A daily 02:30 fires once that day, at 03:00 EDT; every
// other day at 02:30.
func TestSpringForwardGapFiresOnceAfterTheGap(t *testing.T) {
	t.Parallel()
	tm := mustTiming(t, "30 2 * * *", "America/New_York")
	got := fires(tm, utc("2026-03-06T12:00:00Z"), 4)
	require.Equal(t, []time.Time{
		utc("2026-03-07T07:30:00Z"), // 02:30 EST
		utc("2026-03-08T07:00:00Z"), // 03:00 EDT: the end of the gap
		utc("2026-03-09T06:30:00Z"), // 02:30 EDT
		utc("2026-03-10T06:30:00Z"),
	}, got)

	// Every 15 minutes through the gap: 01:45 EST, then the four wall times
	// 02:00-02:45 (which do not exist) and 03:00 fire once, at 03:00 EDT.
	q := fires(mustTiming(t, "*/15 * * * *", "America/New_York"), utc("2026-03-08T06:40:00Z"), 4)
	require.Equal(t, []time.Time{
		utc("2026-03-08T06:45:00Z"), // 01:45 EST
		utc("2026-03-08T07:00:00Z"), // 03:00 EDT
		utc("2026-03-08T07:15:00Z"), // 03:15 EDT
		utc("2026-03-08T07:30:00Z"),
	}, q)
}

// The fall-back hour: in New York on 2026-11-01 clocks go back from 02:00
// EDT to 01:00 EST, so 01:30 happens twice. It fires at the first only.
func TestFallBackHourFiresOnce(t *testing.T) {
	t.Parallel()
	tm := mustTiming(t, "30 1 * * *", "America/New_York")
	got := fires(tm, utc("2026-10-30T12:00:00Z"), 4)
	require.Equal(t, []time.Time{
		utc("2026-10-31T05:30:00Z"), // 01:30 EDT
		utc("2026-11-01T05:30:00Z"), // 01:30 EDT, the first occurrence
		utc("2026-11-02T06:30:00Z"), // 01:30 EST
		utc("2026-11-03T06:30:00Z"),
	}, got)

	// Every 30 minutes: 01:00 and 01:30 fire in summer time, then the
	// repeated hour is not fired again, and 02:00 EST follows.
	q := fires(mustTiming(t, "0,30 * * * *", "America/New_York"), utc("2026-11-01T04:45:00Z"), 4)
	require.Equal(t, []time.Time{
		utc("2026-11-01T05:00:00Z"), // 01:00 EDT
		utc("2026-11-01T05:30:00Z"), // 01:30 EDT
		utc("2026-11-01T07:00:00Z"), // 02:00 EST (01:00 and 01:30 EST are repeats)
		utc("2026-11-01T07:30:00Z"),
	}, q)
	// Asked from inside the repeated hour, the next fire is still not a repeat.
	require.Equal(t, utc("2026-11-01T07:00:00Z"), tm2(t).next(utc("2026-11-01T06:10:00Z")))
}

func tm2(t *testing.T) timing { return mustTiming(t, "0,30 * * * *", "America/New_York") }

// A zone east of UTC (Europe/Berlin: +01 to +02 at 01:00 UTC on 2026-03-29,
// back at 01:00 UTC on 2026-10-25) behaves the same way.
func TestDSTEastOfUTC(t *testing.T) {
	t.Parallel()
	tm := mustTiming(t, "30 2 * * *", "Europe/Berlin")
	require.Equal(t, []time.Time{
		utc("2026-03-28T01:30:00Z"), // 02:30 CET
		utc("2026-03-29T01:00:00Z"), // 03:00 CEST: the end of the gap
		utc("2026-03-30T00:30:00Z"), // 02:30 CEST
	}, fires(tm, utc("2026-03-27T12:00:00Z"), 3))
	require.Equal(t, []time.Time{
		utc("2026-10-24T00:30:00Z"), // 02:30 CEST
		utc("2026-10-25T00:30:00Z"), // 02:30 CEST, the first occurrence
		utc("2026-10-26T01:30:00Z"), // 02:30 CET
	}, fires(tm, utc("2026-10-23T12:00:00Z"), 3))
}

func TestOnceFiresOnce(t *testing.T) {
	t.Parallel()
	at := utc("2026-05-01T10:00:00Z")
	tm, err := parseTiming("", &at, "")
	require.NoError(t, err)
	require.Equal(t, at, tm.next(utc("2026-05-01T09:00:00Z")))
	require.True(t, tm.next(at).IsZero())
	_, err = parseTiming("* * * * *", &at, "")
	require.Error(t, err, "cron and at together")
}

// Any cron expression and zone either parse to a timing whose next fire is
// later than the instant asked about, or are refused as a fault.Invalid;
// nothing panics.
func FuzzParseTiming(f *testing.F) {
	for _, s := range []string{"*/5 * * * *", "30 2 * * *", "0 0 30 2 *", "@every 90s", "@hourly", "5-1/0 * * * *",
		"TZ=UTC", "* * * * * * *", "@every -1s", "0-59/59 0 1 1 0"} {
		f.Add(s, "America/New_York")
	}
	f.Add("* * * * *", "Europe/Berlin")
	f.Fuzz(func(t *testing.T, expr, zone string) {
		tm, err := parseTiming(expr, nil, zone)
		if err != nil {
			var inv *fault.Invalid
			if !errors.As(err, &inv) {
				t.Fatalf("%q in %q: %v is not a fault.Invalid", expr, zone, err)
			}
			return
		}
		from := utc("2026-11-01T05:10:00Z")
		for range 3 {
			next := tm.next(from)
			if next.IsZero() {
				return
			}
			if !next.After(from) {
				t.Fatalf("%q in %q: next(%s) = %s", expr, zone, from, next)
			}
			from = next
		}
	})
}
