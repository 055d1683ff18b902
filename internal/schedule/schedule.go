package schedule

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/nodes"
)

// Overlap says what a fire does while the schedule's last run is not over.
type Overlap string

// The overlap policies.
const (
	// OverlapSkip (the default) records the fire as skipped.
	OverlapSkip Overlap = "skip"
	// OverlapQueue starts a run that depends on the last one (it waits).
	OverlapQueue Overlap = "queue"
	// OverlapAllow starts a run at once, beside the last one.
	OverlapAllow Overlap = "allow"
	// OverlapBufferOne queues one run behind the last one, and skips while
	// one already waits.
	OverlapBufferOne Overlap = "buffer_one"
	// OverlapCancelOther cancels the last run (and its chain), then starts.
	OverlapCancelOther Overlap = "cancel_other"
)

// Overlaps lists every overlap policy.
func Overlaps() []Overlap {
	return []Overlap{OverlapSkip, OverlapQueue, OverlapAllow, OverlapBufferOne, OverlapCancelOther}
}

func (o Overlap) valid() bool {
	for _, v := range Overlaps() {
		if o == v {
			return true
		}
	}
	return false
}

// Catchup says how many of the fires missed within the catch-up window run.
type Catchup string

// The catch-up policies.
const (
	// CatchupOne (the default) runs the missed fires once.
	CatchupOne Catchup = "one"
	// CatchupAll runs each missed fire (at most MaxCatchupRuns).
	CatchupAll Catchup = "all"
)

// Limits and defaults of a schedule's settings.
const (
	// DefaultCatchupWindow is how late a fire may still run.
	DefaultCatchupWindow = time.Minute
	// MinCatchupWindow and MaxCatchupWindow bound catchup_window_ms.
	MinCatchupWindow = time.Second
	MaxCatchupWindow = 31 * 24 * time.Hour
	// MaxCatchupRuns bounds the runs one catch-up (catchup: all) makes; older
	// missed fires are recorded as skipped.
	MaxCatchupRuns = 100
	// MaxJitter bounds jitter_ms.
	MaxJitter = time.Hour
	// MaxBackoffSteps and MaxBackoffStep bound backoff_ms.
	MaxBackoffSteps = 16
	MaxBackoffStep  = 7 * 24 * time.Hour
	// MaxChain is the most follow-up nodes a template may hold: a run is at
	// most MaxChain+1 nodes deep.
	MaxChain = 9
	// HistoryLimit is how many run records a schedule keeps; each new one
	// drops the oldest beyond it.
	HistoryLimit = 1000
	// PreviewFires is how many upcoming fires a schedule's view shows.
	PreviewFires = 5
	// MaxNoteLength bounds a pause or resume note.
	MaxNoteLength = 1000
	// DefaultLimit and MaxLimit bound a page of a list.
	DefaultLimit = 100
	MaxLimit     = 1000
	// maxPending bounds the runs whose outcome the failure count waits for.
	maxPending = 100
)

// DefaultBackoff is the failure backoff ladder: after n consecutive failed
// runs the next fire waits at least DefaultBackoff[n-1] (the last step
// repeating) after the last failure ended.
func DefaultBackoff() []int64 {
	return []int64{30_000, 60_000, 300_000, 900_000, 3_600_000}
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// ValidID reports whether id may name a schedule: 1-128 characters of
// [A-Za-z0-9._:-] starting with a letter or digit.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Trigger says what made a run.
type Trigger string

// The triggers.
const (
	TriggerSchedule Trigger = "schedule"
	TriggerManual   Trigger = "manual"
)

// SkipReason says why a fire made no run.
type SkipReason string

// The skip reasons.
const (
	// SkipOverlap: the last run was not over (skip, or buffer_one with one
	// already waiting).
	SkipOverlap SkipReason = "overlap"
	// SkipBackoff: the failure backoff was not over.
	SkipBackoff SkipReason = "backoff"
	// SkipMissed: the fire was older than the catch-up window when the
	// server could run it, or folded into a catch-up run by catchup: one.
	SkipMissed SkipReason = "missed"
)

// caller is who a schedule's fires act as: its nodes are created_by
// schedule:<id>, and so are their events. No token or key may have a
// subject with that prefix (graphstore.SubjectProblem), so none passes for it.
func caller(tenant, id string) nodes.Caller {
	return nodes.Caller{Tenant: tenant, Sub: graphstore.SchedulePrefix + id, Dispatcher: true}
}

func (r *Record) timing() (timing, error) { return parseTiming(r.Cron, r.At, r.Timezone) }

func (r *Record) window() time.Duration { return ms(r.CatchupWindowMS) }

// jitter is the delay added to the fire at nominal instant at: the same for
// the same schedule and instant, so a restart or a preview never moves it.
func (r *Record) jitter(tenant string, at time.Time) time.Duration {
	if r.JitterMS <= 0 {
		return 0
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", tenant, r.ID, at.UnixNano())
	return ms(int64(h.Sum64() % uint64(r.JitterMS+1)))
}

// due is when the fire at nominal instant at runs.
func (r *Record) due(tenant string, at time.Time) time.Time { return at.Add(r.jitter(tenant, at)) }

// backoffUntil is the instant before which no fire runs after the failures
// counted so far (zero when none).
func (r *Record) backoffUntil() time.Time {
	if r.Failures <= 0 || r.LastFailureAt == nil || len(r.BackoffMS) == 0 {
		return time.Time{}
	}
	step := min(r.Failures, int64(len(r.BackoffMS))) - 1
	return r.LastFailureAt.Add(ms(r.BackoffMS[step]))
}

func ms(d int64) time.Duration { return time.Duration(d) * time.Millisecond }

// Settings are a schedule's settings as a create body gives them: an
// absent (nil) field takes its default.
type Settings struct {
	ID              *string          `json:"id,omitempty"`
	Cron            *string          `json:"cron,omitempty"`
	At              *time.Time       `json:"at,omitempty"`
	Timezone        *string          `json:"timezone,omitempty"`
	Template        *nodes.NodeSpec  `json:"template,omitempty"`
	Chain           []nodes.NodeSpec `json:"chain,omitempty"`
	Overlap         *Overlap         `json:"overlap,omitempty"`
	Catchup         *Catchup         `json:"catchup,omitempty"`
	CatchupWindowMS *int64           `json:"catchup_window_ms,omitempty"`
	JitterMS        *int64           `json:"jitter_ms,omitempty"`
	BackoffMS       []int64          `json:"backoff_ms,omitempty"`
	Enabled         *bool            `json:"enabled,omitempty"`
}

// apply validates the settings (all but the template's node fields, which
// prepare checks) and writes them into r.
func (st Settings) apply(r *Record) error {
	r.Cron, r.At, r.Timezone = "", nil, "UTC"
	if st.Cron != nil {
		r.Cron = *st.Cron
	}
	if st.At != nil {
		at := st.At.UTC()
		r.At = &at
	}
	if st.Timezone != nil && *st.Timezone != "" {
		r.Timezone = *st.Timezone
	}
	if st.Template == nil {
		return fault.Invalidf("template", "is required: the node each fire creates")
	}
	if err := checkTemplate(*st.Template, "template."); err != nil {
		return err
	}
	r.Template = *st.Template
	if len(st.Chain) > MaxChain {
		return fault.Invalidf("chain", "must hold at most %d nodes (a run is at most %d nodes deep)", MaxChain, MaxChain+1)
	}
	for i, c := range st.Chain {
		if err := checkTemplate(c, fmt.Sprintf("chain[%d].", i)); err != nil {
			return err
		}
	}
	r.Chain = st.Chain
	r.Overlap = OverlapSkip
	if st.Overlap != nil {
		if !st.Overlap.valid() {
			return fault.Invalidf("overlap", "must be skip, queue, allow, buffer_one or cancel_other")
		}
		r.Overlap = *st.Overlap
	}
	r.Catchup = CatchupOne
	if st.Catchup != nil {
		if *st.Catchup != CatchupOne && *st.Catchup != CatchupAll {
			return fault.Invalidf("catchup", "must be one or all")
		}
		r.Catchup = *st.Catchup
	}
	r.CatchupWindowMS = DefaultCatchupWindow.Milliseconds()
	if v := st.CatchupWindowMS; v != nil {
		if *v < MinCatchupWindow.Milliseconds() || *v > MaxCatchupWindow.Milliseconds() {
			return fault.Invalidf("catchup_window_ms", "must be from %d to %d", MinCatchupWindow.Milliseconds(), MaxCatchupWindow.Milliseconds())
		}
		r.CatchupWindowMS = *v
	}
	r.JitterMS = 0
	if v := st.JitterMS; v != nil {
		if *v < 0 || *v > MaxJitter.Milliseconds() {
			return fault.Invalidf("jitter_ms", "must be from 0 to %d", MaxJitter.Milliseconds())
		}
		r.JitterMS = *v
	}
	r.BackoffMS = DefaultBackoff()
	if st.BackoffMS != nil {
		if len(st.BackoffMS) > MaxBackoffSteps {
			return fault.Invalidf("backoff_ms", "must hold at most %d steps", MaxBackoffSteps)
		}
		for i, v := range st.BackoffMS {
			if v < 0 || v > MaxBackoffStep.Milliseconds() {
				return fault.Invalidf(fmt.Sprintf("backoff_ms[%d]", i), "must be from 0 to %d", MaxBackoffStep.Milliseconds())
			}
		}
		r.BackoffMS = append([]int64{}, st.BackoffMS...)
	}
	r.Enabled = true
	if st.Enabled != nil {
		r.Enabled = *st.Enabled
	}
	_, err := r.timing()
	return err
}

// checkTemplate refuses the node fields a template cannot hold: every fire
// makes new nodes, so they get generated ids, a run's edges are the
// schedule's to make, and blobs are kept only by the nodes that name them.
func checkTemplate(spec nodes.NodeSpec, prefix string) error {
	switch {
	case spec.ID != nil:
		return fault.Invalidf(prefix+"id", "a schedule's nodes get generated ids")
	case spec.Parent != nil:
		return fault.Invalidf(prefix+"parent", "is not allowed in a schedule's template")
	case len(spec.DependsOn) > 0:
		return fault.Invalidf(prefix+"depends_on", "is not allowed in a schedule's template: chain steps depend on the step before them")
	case spec.RunAt != nil:
		return fault.Invalidf(prefix+"run_at", "is not allowed in a schedule's template: use delay_ms, counted from the fire")
	case len(spec.Blobs) > 0:
		// A blob only a schedule names is no node's, so it would be
		// collected, and every later fire would fail.
		return fault.Invalidf(prefix+"blobs", "is not allowed in a schedule's template: a run's worker can attach blobs to its node")
	}
	return nil
}

// settings returns the settings r holds, as a create body would give them
// (copies: applying them to r again must not read what it overwrites).
func (r *Record) settings() Settings {
	id, zone, tmpl := r.ID, r.Timezone, r.Template
	overlap, catchup, window, jitter, enabled := r.Overlap, r.Catchup, r.CatchupWindowMS, r.JitterMS, r.Enabled
	st := Settings{
		ID: &id, Timezone: &zone, Template: &tmpl, Chain: append([]nodes.NodeSpec(nil), r.Chain...),
		Overlap: &overlap, Catchup: &catchup, CatchupWindowMS: &window, JitterMS: &jitter,
		BackoffMS: append([]int64{}, r.BackoffMS...), Enabled: &enabled,
	}
	if r.Cron != "" {
		cron := r.Cron
		st.Cron = &cron
	}
	if r.At != nil {
		at := *r.At
		st.At = &at
	}
	return st
}
