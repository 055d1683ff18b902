package schedule

import (
	"strings"
	"time"
	_ "time/tzdata" // IANA zones answer the same on every machine, with or without a system zoneinfo

	"github.com/robfig/cron/v3"

	"github.com/tether-run/tether/internal/fault"
)

// timing is when a schedule fires: a cron expression in a time zone, a fixed
// interval (@every), or one instant (at).
type timing interface {
	// next is the first fire instant strictly after t; zero when there is none.
	next(t time.Time) time.Time
}

// Limits of a timing.
const (
	MaxCronLength     = 256
	MaxTimezoneLength = 64
	// MinEvery and MaxEvery bound an @every interval.
	MinEvery = time.Second
	MaxEvery = 366 * 24 * time.Hour
	// searchSteps bounds the wall times a cron timing tries for one fire:
	// enough to cross a repeated hour of a schedule firing every second.
	searchSteps = 10000
)

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom |
	cron.Month | cron.Dow | cron.Descriptor)

// loadZone resolves an IANA zone name ("" is UTC). The zone database is
// built into the binary (time/tzdata), so the answer does not depend on the
// machine.
func loadZone(name string) (*time.Location, error) {
	switch {
	case name == "" || name == "UTC":
		return time.UTC, nil
	case name == "Local" || len(name) > MaxTimezoneLength || strings.ContainsAny(name, "\x00\\") || strings.HasPrefix(name, "/"):
		return nil, fault.Invalidf("timezone", "must be an IANA time zone name such as Europe/Berlin, not %q", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fault.Invalidf("timezone", "unknown time zone %q: use an IANA name such as America/New_York", name)
	}
	return loc, nil
}

// parseCron parses a cron expression for zone loc: five fields (minute hour
// day-of-month month day-of-week), six with a leading seconds field, a
// descriptor (@hourly, @daily, @midnight, @weekly, @monthly, @yearly,
// @annually), or @every <duration>.
func parseCron(expr string, loc *time.Location) (t timing, err error) {
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return nil, fault.Invalidf("cron", "must not be empty")
	case len(expr) > MaxCronLength:
		return nil, fault.Invalidf("cron", "must be at most %d characters", MaxCronLength)
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return nil, fault.Invalidf("cron", "name the time zone in timezone, not in the expression")
	}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		switch {
		case err != nil:
			return nil, fault.Invalidf("cron", "@every takes a duration such as 90s or 1h30m")
		case d < MinEvery || d > MaxEvery:
			return nil, fault.Invalidf("cron", "@every must be from 1s to 8784h (366 days)")
		case d%time.Second != 0:
			return nil, fault.Invalidf("cron", "@every must be a whole number of seconds")
		}
		return every{d: d}, nil
	}
	// The parser is not ours: a panic on some input must still be a 400.
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fault.Invalidf("cron", "is not a valid cron expression")
		}
	}()
	s, perr := cronParser.Parse(expr)
	if perr != nil {
		return nil, fault.Invalidf("cron", "is not a valid cron expression: %v", perr)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fault.Invalidf("cron", "is not a valid cron expression")
	}
	// The expression is matched against wall-clock fields carried as UTC
	// ("floating" times); wallClock.next maps them to instants in loc.
	spec.Location = time.UTC
	return wallClock{spec: spec, loc: loc}, nil
}

// wallClock is a cron expression read as wall-clock times in loc.
//
// The daylight-saving rule: each wall-clock time the expression names fires
// once.
//   - A wall time that does not exist (the spring-forward gap, 02:30 on the
//     day clocks jump from 02:00 to 03:00) fires at the first instant after
//     the gap (03:00 new time). Several such wall times (every 15 minutes
//     through the gap) fire once there, together with a fire that falls
//     exactly at that instant.
//   - A wall time that occurs twice (the fall-back hour, 01:30 on the day
//     clocks go from 02:00 back to 01:00) fires at its first occurrence
//     only (01:30 summer time); its repeat is not a fire.
//
// So a daily 02:30 job runs every day, once, and an every-15-minutes job
// runs neither twice nor not at all in the repeated hour: it pauses for the
// repeat.
type wallClock struct {
	spec *cron.SpecSchedule
	loc  *time.Location
}

func (w wallClock) next(t time.Time) time.Time {
	f := floating(t, w.loc)
	for range searchSteps {
		f = w.spec.Next(f)
		if f.IsZero() {
			return time.Time{}
		}
		if at := resolveWall(f, w.loc); at.After(t) {
			return at.UTC()
		}
	}
	return time.Time{}
}

// floating is t's wall-clock fields in loc, carried as a UTC time.
func floating(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// resolveWall maps wall time f (fields carried as UTC) to its instant in
// loc: its first occurrence when it occurs twice, the end of the gap when it
// does not occur at all.
func resolveWall(f time.Time, loc *time.Location) time.Time {
	// Every offset in force within 15 hours of f (no zone is further from
	// UTC than 14 hours, and none changes offset twice in a day).
	var offsets []int
	x, end := f.Add(-15*time.Hour), f.Add(15*time.Hour)
	for range 8 {
		lx := x.In(loc)
		_, off := lx.Zone()
		if !containsInt(offsets, off) {
			offsets = append(offsets, off)
		}
		_, zoneEnd := lx.ZoneBounds()
		if zoneEnd.IsZero() || zoneEnd.After(end) {
			break
		}
		x = zoneEnd
	}
	var first time.Time
	minOff := offsets[0]
	for _, off := range offsets {
		minOff = min(minOff, off)
		c := f.Add(-time.Duration(off) * time.Second)
		if _, o := c.In(loc).Zone(); o == off && (first.IsZero() || c.Before(first)) {
			first = c
		}
	}
	if !first.IsZero() {
		return first
	}
	// In the gap: read with the offset before the jump, f lands after the
	// transition, in the zone period that begins where the gap ends.
	start, _ := f.Add(-time.Duration(minOff) * time.Second).In(loc).ZoneBounds()
	if start.IsZero() {
		return f.Add(-time.Duration(minOff) * time.Second)
	}
	return start
}

func containsInt(xs []int, v int) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

// every fires at each multiple of d since the Unix epoch: absolute
// instants, so daylight saving and restarts never move it.
type every struct{ d time.Duration }

func (e every) next(t time.Time) time.Time {
	d := e.d.Nanoseconds()
	n := t.UnixNano()
	k := n / d
	if n < 0 && n%d != 0 {
		k--
	}
	return time.Unix(0, (k+1)*d).UTC()
}

// once fires at one instant.
type once struct{ at time.Time }

func (o once) next(t time.Time) time.Time {
	if o.at.After(t) {
		return o.at.UTC()
	}
	return time.Time{}
}

// parseTiming builds the timing of a schedule from exactly one of cron and at.
func parseTiming(cronExpr string, at *time.Time, zone string) (timing, error) {
	loc, err := loadZone(zone)
	if err != nil {
		return nil, err
	}
	switch {
	case cronExpr != "" && at != nil:
		return nil, fault.Invalidf("at", "give either cron or at, not both")
	case at != nil:
		return once{at: at.UTC()}, nil
	case cronExpr == "":
		return nil, fault.Invalidf("cron", "is required (or at, for a one-shot schedule)")
	}
	return parseCron(cronExpr, loc)
}
