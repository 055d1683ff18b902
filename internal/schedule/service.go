package schedule

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/tinylib/msgp/msgp"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/startstop"
	"github.com/tether-run/tether/internal/testsignal"
)

// Config wires a Service.
type Config struct {
	Store  *graphstore.Store
	Nodes  *nodes.Service
	Clock  clock.Clock // the store's clock when nil
	Logger *slog.Logger
	// RetryDelay is how long the loop waits before it tries again a fire
	// whose transaction failed (default 5 s).
	RetryDelay time.Duration
}

// Service keeps the schedules of every tenant and fires them.
type Service struct {
	// The firing loop runs between Start and Stop (startstop's).
	startstop.BaseStartStop

	// TestSignals tell tests what the firing loop did; off unless a test
	// enables them.
	TestSignals TestSignals

	store *graphstore.Store
	nodes *nodes.Service
	clock clock.Clock
	log   *slog.Logger
	loop  *loop
}

// TestSignals are the firing loop's signals to tests.
type TestSignals struct {
	// Idle is sent each time the loop goes to sleep, with the instant its
	// timer is armed for (zero: no schedule is due): until the clock reaches
	// it, nothing fires unless a write to a schedule wakes the loop.
	Idle testsignal.Signal[time.Time]
	// Fired is sent after each pass that made the due fires of the
	// schedules it carries (a fire that failed is retried RetryDelay later).
	Fired testsignal.Signal[[]Ref]
}

// New builds a Service. Start begins firing.
func New(cfg Config) *Service {
	cfg.Clock = clock.Or(cfg.Clock, cfg.Store.Clock())
	cfg.Logger = logger.OrDiscard(cfg.Logger)
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = 5 * time.Second
	}
	s := &Service{store: cfg.Store, nodes: cfg.Nodes, clock: cfg.Clock, log: cfg.Logger}
	s.loop = newLoop(s, cfg.RetryDelay)
	return s
}

// View is a schedule as read at one instant: its record, with the failure
// count brought up to date and the next fires it will make.
type View struct {
	Record
	// NextFires are the instants of the next PreviewFires fires (jitter
	// included, fires the backoff skips left out).
	NextFires []time.Time
	// BackoffUntil is set while the failure backoff holds fires back.
	BackoffUntil *time.Time
}

// track tells the loop, once tx commits, when schedule id is next due (rec
// nil: never, it is gone).
func (s *Service) track(tx *graphstore.Tx, tenant, id string, rec *Record) {
	var due time.Time
	if rec != nil && rec.Enabled && rec.NextFireAt != nil {
		due = rec.due(tenant, *rec.NextFireAt)
	}
	ref := Ref{tenant, id}
	tx.OnCommit(func() { s.loop.set(ref, due) })
}

// Create stores a new schedule made by by. Its first fire is the first
// instant its cron names after now, or its at.
func (s *Service) Create(ctx context.Context, tenant, by string, st Settings) (View, error) {
	rec := Record{}
	if st.ID != nil {
		if !ValidID(*st.ID) {
			return View{}, fault.Invalidf("id", "must be 1-128 characters of [A-Za-z0-9._:-] starting with a letter or digit")
		}
		rec.ID = *st.ID
	} else {
		id, err := uuid.NewV7()
		if err != nil {
			return View{}, err
		}
		rec.ID = id.String()
	}
	if err := st.apply(&rec); err != nil {
		return View{}, err
	}
	def, err := s.nodes.Defaults(ctx, tenant)
	if err != nil {
		return View{}, err
	}
	if err := s.checkNodes(tenant, &rec, def); err != nil {
		return View{}, err
	}
	var v View
	err = s.store.Update(ctx, func(tx *graphstore.Tx) error {
		var old Record
		if ok, err := tx.Records().ScheduleGet(tenant, rec.ID, &old); err != nil || ok {
			if err == nil {
				err = &fault.AlreadyExists{What: "schedule", ID: rec.ID}
			}
			return err
		}
		now := tx.Now().UTC()
		rec.Version, rec.CreatedBy, rec.CreatedAt, rec.UpdatedAt = 1, by, now, now
		if err := rec.rearm(now); err != nil {
			return err
		}
		if !rec.Enabled {
			rec.pausedBy(by, now)
		}
		if err := tx.Records().SchedulePut(tenant, rec.ID, &rec); err != nil {
			return err
		}
		s.track(tx, tenant, rec.ID, &rec)
		v, err = view(tx, tenant, rec, now)
		return err
	})
	if err != nil {
		return View{}, fmt.Errorf("error creating schedule: %w", err)
	}
	return v, nil
}

// rearm sets the next fire from now: the first instant the cron names after
// it, or at. A cron that names no instant, and an at further in the past
// than the catch-up window, are refused.
func (r *Record) rearm(now time.Time) error {
	tm, err := r.timing()
	if err != nil {
		return err
	}
	if r.At != nil {
		if r.At.Before(now.Add(-r.window())) {
			return fault.Invalidf("at", "is further in the past than catchup_window_ms")
		}
		at := *r.At
		r.NextFireAt = &at
		return nil
	}
	next := tm.next(now)
	if next.IsZero() {
		return fault.Invalidf("cron", "%q names no instant (such as February 30th)", r.Cron)
	}
	r.NextFireAt = &next
	return nil
}

// checkNodes validates the template and chain as a fire would make them.
func (s *Service) checkNodes(tenant string, rec *Record, def nodes.Defaults) error {
	c := caller(tenant, rec.ID)
	for i, spec := range append([]nodes.NodeSpec{rec.Template}, rec.Chain...) {
		if _, err := s.nodes.Prepare(c, spec, def, stepField(i)); err != nil {
			return err
		}
	}
	return nil
}

// view builds the view of rec at now: the failure count settled as the next
// fire would settle it (nothing is written), and the next fires.
func view(tx *graphstore.Tx, tenant string, rec Record, now time.Time) (View, error) {
	rec.Pending = append([]RunRef(nil), rec.Pending...)
	if err := settle(tx, tenant, &rec, nil); err != nil {
		return View{}, err
	}
	v := View{Record: rec, NextFires: []time.Time{}}
	until := rec.backoffUntil()
	if until.After(now) {
		v.BackoffUntil = &until
	}
	if !rec.Enabled || rec.NextFireAt == nil {
		return v, nil
	}
	tm, err := rec.timing()
	if err != nil {
		return View{}, err
	}
	windowStart := now.Add(-rec.window())
	n := *rec.NextFireAt
	for steps := 0; steps < fireBudget && !n.IsZero() && len(v.NextFires) < PreviewFires; steps++ {
		if !n.Before(until) && !n.Before(windowStart) {
			v.NextFires = append(v.NextFires, rec.due(tenant, n).UTC())
		}
		n = tm.next(n)
	}
	return v, nil
}

// Get returns schedule id of tenant.
func (s *Service) Get(tenant, id string) (View, error) {
	var v View
	err := s.store.View(func(tx *graphstore.Tx) error {
		rec, err := load(tx, tenant, id)
		if err != nil {
			return err
		}
		v, err = view(tx, tenant, rec, tx.Now())
		return err
	})
	return v, err
}

func load(tx *graphstore.Tx, tenant, id string) (Record, error) {
	var rec Record
	ok, err := tx.Records().ScheduleGet(tenant, id, &rec)
	if err != nil {
		return Record{}, err
	}
	if !ok {
		return Record{}, &fault.NotFound{What: "schedule", ID: id}
	}
	return rec, nil
}

// List returns one page of the tenant's schedules in id order and the
// cursor of the next page ("" at the end).
func (s *Service) List(tenant, cursor string, limit int) ([]View, string, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	after, err := decodeCursor(cursor, "s:")
	if err != nil {
		return nil, "", err
	}
	var out []View
	more := false
	err = s.store.View(func(tx *graphstore.Tx) error {
		now := tx.Now()
		take := pageOf[Record](&out, &more, limit, "schedule", func(rec Record) (View, error) { return view(tx, tenant, rec, now) })
		return tx.Records().ScheduleList(tenant, after, func(_ string, raw []byte) (bool, error) { return take(raw) })
	})
	if err != nil {
		return nil, "", fmt.Errorf("error listing schedules: %w", err)
	}
	next := ""
	if more {
		next = encodeCursor("s:" + out[len(out)-1].ID)
	}
	return out, next, nil
}

func encodeCursor(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func decodeCursor(cursor, prefix string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	rest, ok := strings.CutPrefix(string(raw), prefix)
	if err != nil || !ok || rest == "" {
		return "", fault.Invalidf("cursor", "not a cursor of this list")
	}
	return rest, nil
}

// Patch is a JSON merge patch of a schedule's settings: a present field is
// set, a present null restores its default.
type Patch struct {
	fields map[string]json.RawMessage
}

var patchable = map[string]bool{
	"cron": true, "at": true, "timezone": true, "template": true, "chain": true,
	"overlap": true, "catchup": true, "catchup_window_ms": true, "jitter_ms": true,
	"backoff_ms": true, "enabled": true,
}

// DecodePatch parses a merge patch body; unknown fields are rejected.
func DecodePatch(raw []byte) (Patch, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return Patch{}, fault.Invalidf("", "the body must be a JSON object")
	}
	if dec.More() {
		return Patch{}, fault.Invalidf("", "the body must hold one JSON object")
	}
	for k := range fields {
		if !patchable[k] {
			return Patch{}, fault.Invalidf(k, "unknown field, or not changeable by PATCH")
		}
	}
	return Patch{fields: fields}, nil
}

// on decodes field of the patch strictly into dst (a pointer to a pointer
// or slice field of Settings): null sets it to nil.
func (p Patch) on(field string, dst any) error {
	raw, ok := p.fields[field]
	if !ok {
		return nil
	}
	// Decode into a fresh value: decoding into the current one would merge
	// maps member by member, and write through into the record.
	v := reflect.ValueOf(dst).Elem()
	v.Set(reflect.Zero(v.Type()))
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field != "" {
			return fault.Invalidf(field+"."+ute.Field, "has the wrong type")
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fault.Invalidf(field+"."+strings.Trim(name, `"`), "unknown field")
		}
		return fault.Invalidf(field, "has the wrong type or an invalid value")
	}
	return nil
}

// mergeTemplate turns a template member of the patch into the whole
// template it makes of cur (RFC 7396: objects merge, null removes a member;
// null for the whole template is refused, a schedule needs one).
func (p Patch) mergeTemplate(cur nodes.NodeSpec) error {
	raw, ok := p.fields["template"]
	if !ok {
		return nil
	}
	var patch any
	if err := json.Unmarshal(raw, &patch); err != nil {
		return fault.Invalidf("template", "must be a JSON object")
	}
	obj, ok := patch.(map[string]any)
	if !ok {
		return fault.Invalidf("template", "must be a JSON object: a schedule needs a template")
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	var base map[string]any
	if err := json.Unmarshal(b, &base); err != nil {
		return err
	}
	merged, err := json.Marshal(mergePatch(base, obj))
	if err != nil {
		return err
	}
	p.fields["template"] = merged
	return nil
}

// mergePatch applies an RFC 7396 merge patch to target.
func mergePatch(target, patch map[string]any) map[string]any {
	if target == nil {
		target = map[string]any{}
	}
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(target, k)
		case map[string]any:
			t, _ := target[k].(map[string]any)
			target[k] = mergePatch(t, pv)
		default:
			target[k] = v
		}
	}
	return target
}

func (p Patch) has(fields ...string) bool {
	for _, f := range fields {
		if _, ok := p.fields[f]; ok {
			return true
		}
	}
	return false
}

// Update applies p to schedule id. A change of cron, at or timezone, and
// enabling a paused schedule, set the next fire afresh from now.
func (s *Service) Update(ctx context.Context, tenant, id, by string, p Patch) (View, error) {
	def, err := s.nodes.Defaults(ctx, tenant)
	if err != nil {
		return View{}, err
	}
	var v View
	err = s.store.Update(ctx, func(tx *graphstore.Tx) error {
		rec, err := load(tx, tenant, id)
		if err != nil {
			return err
		}
		st := rec.settings()
		if err := p.mergeTemplate(rec.Template); err != nil {
			return err
		}
		for field, dst := range map[string]any{
			"cron": &st.Cron, "at": &st.At, "timezone": &st.Timezone, "template": &st.Template,
			"chain": &st.Chain, "overlap": &st.Overlap, "catchup": &st.Catchup,
			"catchup_window_ms": &st.CatchupWindowMS, "jitter_ms": &st.JitterMS,
			"backoff_ms": &st.BackoffMS, "enabled": &st.Enabled,
		} {
			if err := p.on(field, dst); err != nil {
				return err
			}
		}
		// null backoff_ms restores the default ladder; [] means none.
		if raw, ok := p.fields["backoff_ms"]; ok && bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			st.BackoffMS = DefaultBackoff()
		}
		wasEnabled := rec.Enabled
		if err := st.apply(&rec); err != nil {
			return err
		}
		if err := s.checkNodes(tenant, &rec, def); err != nil {
			return err
		}
		now := tx.Now().UTC()
		if p.has("cron", "at", "timezone") || (rec.Enabled && !wasEnabled) {
			if err := rec.rearm(now); err != nil {
				return err
			}
		}
		if rec.Enabled != wasEnabled {
			rec.pausedBy(by, now)
		}
		rec.Version++
		rec.UpdatedAt = now
		if err := tx.Records().SchedulePut(tenant, id, &rec); err != nil {
			return err
		}
		s.track(tx, tenant, id, &rec)
		v, err = view(tx, tenant, rec, now)
		return err
	})
	if err != nil {
		return View{}, fmt.Errorf("error updating schedule: %w", err)
	}
	return v, nil
}

// pausedBy sets who paused the schedule and when, or clears them once it
// is enabled again.
func (r *Record) pausedBy(by string, now time.Time) {
	if r.Enabled {
		r.PausedAt, r.PausedBy = nil, ""
		return
	}
	r.PausedAt, r.PausedBy = &now, by
}

// SetEnabled pauses (enabled false) or resumes a schedule, with a note of
// why. Fires that fall while it is paused are not made, not even as
// catch-up: a resumed schedule fires next at the first instant its cron
// names after the resume (a one-shot keeps its at). Pausing a paused
// schedule, or resuming a running one, only replaces the note.
func (s *Service) SetEnabled(ctx context.Context, tenant, id, by string, enabled bool, note string) (View, error) {
	if len(note) > MaxNoteLength {
		return View{}, fault.Invalidf("note", "must be at most %d bytes", MaxNoteLength)
	}
	var v View
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		rec, err := load(tx, tenant, id)
		if err != nil {
			return err
		}
		now := tx.Now().UTC()
		if enabled != rec.Enabled {
			rec.Enabled = enabled
			if enabled && rec.At == nil {
				if err := rec.rearm(now); err != nil {
					return err
				}
			}
			rec.pausedBy(by, now)
		}
		rec.Note = note
		rec.Version++
		rec.UpdatedAt = now
		if err := tx.Records().SchedulePut(tenant, id, &rec); err != nil {
			return err
		}
		s.track(tx, tenant, id, &rec)
		v, err = view(tx, tenant, rec, now)
		return err
	})
	if err != nil {
		return View{}, fmt.Errorf("error pausing or resuming schedule: %w", err)
	}
	return v, nil
}

// Delete removes a schedule and its run history. The nodes its runs made
// stay: they are the tenant's work like any other.
func (s *Service) Delete(ctx context.Context, tenant, id string) error {
	err := s.store.Update(ctx, func(tx *graphstore.Tx) error {
		if _, err := load(tx, tenant, id); err != nil {
			return err
		}
		if err := tx.Records().ScheduleDelete(tenant, id); err != nil {
			return err
		}
		s.track(tx, tenant, id, nil)
		return nil
	})
	if err != nil {
		return fmt.Errorf("error deleting schedule: %w", err)
	}
	return nil
}

// Trigger runs schedule id now, on behalf of by, whether or not it is paused
// and whatever its failure backoff. Its overlap policy applies (overlap
// overrides it when set), except that a fire skip would record is refused
// instead, as a fault.Conflict. A one-shot schedule is removed after it.
func (s *Service) Trigger(ctx context.Context, tenant, id, by string, overlap *Overlap) (RunView, error) {
	if overlap != nil && !overlap.valid() {
		return RunView{}, fault.Invalidf("overlap", "must be skip, queue, allow, buffer_one or cancel_other")
	}
	def, err := s.nodes.Defaults(ctx, tenant)
	if err != nil {
		return RunView{}, err
	}
	var v RunView
	err = s.store.Update(ctx, func(tx *graphstore.Tx) error {
		rec, err := load(tx, tenant, id)
		if err != nil {
			return err
		}
		now := tx.Now()
		f := &firing{s: s, tx: tx, tenant: tenant, rec: &rec, def: def, now: now}
		if err := f.settle(); err != nil {
			return err
		}
		pol := rec.Overlap
		if overlap != nil {
			pol = *overlap
		}
		r, err := f.fire(now, TriggerManual, by, pol, 0, true)
		if err != nil {
			return err
		}
		if err := f.store(); err != nil {
			return err
		}
		v, err = viewRun(tx, tenant, id, *r)
		return err
	})
	if err != nil {
		return RunView{}, fmt.Errorf("error triggering schedule: %w", err)
	}
	return v, nil
}

// Runs returns one page of the runs of schedule id, newest first, and the
// cursor of the next page ("" at the end).
func (s *Service) Runs(tenant, id, cursor string, limit int) ([]RunView, string, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	var before uint64
	if c, err := decodeCursor(cursor, "r:"); err != nil {
		return nil, "", err
	} else if c != "" {
		n, err := strconv.ParseUint(c, 10, 64)
		if err != nil || n == 0 {
			return nil, "", fault.Invalidf("cursor", "not a cursor of this list")
		}
		before = n
	}
	var out []RunView
	more := false
	err := s.store.View(func(tx *graphstore.Tx) error {
		if _, err := load(tx, tenant, id); err != nil {
			return err
		}
		take := pageOf[Run](&out, &more, limit, "run", func(r Run) (RunView, error) { return viewRun(tx, tenant, id, r) })
		return tx.Records().ScheduleRunList(tenant, id, before, func(_ uint64, raw []byte) (bool, error) { return take(raw) })
	})
	if err != nil {
		return nil, "", fmt.Errorf("error listing runs: %w", err)
	}
	next := ""
	if more {
		next = encodeCursor("r:" + strconv.FormatUint(out[len(out)-1].Seq, 10))
	}
	return out, next, nil
}

// pageOf returns a list walker's step that decodes each raw record as R,
// appends its view to out until limit, and then sets more and stops.
func pageOf[R any, P interface {
	*R
	msgp.Unmarshaler
}, V any](out *[]V, more *bool, limit int, what string, toView func(R) (V, error)) func([]byte) (bool, error) {
	return func(raw []byte) (bool, error) {
		if len(*out) == limit {
			*more = true
			return false, nil
		}
		var rec R
		if _, err := P(&rec).UnmarshalMsg(raw); err != nil {
			return false, fmt.Errorf("error decoding a %s record: %w", what, err)
		}
		v, err := toView(rec)
		if err != nil {
			return false, err
		}
		*out = append(*out, v)
		return true, nil
	}
}
