package schedule

import (
	"fmt"
	"time"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

// fireBudget bounds the fire instants one pass walks through: past it a
// long downtime of a schedule firing every second is counted roughly
// instead of one instant at a time.
const fireBudget = 10000

// firing is one pass over a schedule inside a write transaction.
type firing struct {
	s      *Service
	tx     *graphstore.Tx
	tenant string
	rec    *Record
	def    nodes.Defaults
	now    time.Time
	made   bool // a run with nodes was made (a one-shot is then over)
}

// fireTx processes what is due of schedule id at the transaction's instant:
// it takes the outcome of finished runs into the failure count, records
// fires older than the catch-up window as skipped, runs the others (once or
// each, per catchup) subject to the failure backoff and the overlap policy,
// and stores the record with its next fire. Everything commits together:
// a fire, its nodes, their created events, its run record and the
// schedule's next fire, so no fire is lost or made twice by a crash.
func (s *Service) fireTx(tx *graphstore.Tx, tenant, id string, def nodes.Defaults) error {
	var rec Record
	ok, err := tx.Records().ScheduleGet(tenant, id, &rec)
	if err != nil {
		return err
	}
	if !ok {
		s.track(tx, tenant, id, nil)
		return nil
	}
	now := tx.Now()
	if !rec.Enabled || rec.NextFireAt == nil || rec.due(tenant, *rec.NextFireAt).After(now) {
		s.track(tx, tenant, id, &rec) // a stale wake-up: nothing is due
		return nil
	}
	tm, err := rec.timing()
	if err != nil {
		return err
	}
	f := &firing{s: s, tx: tx, tenant: tenant, rec: &rec, def: def, now: now}
	if err := f.settle(); err != nil {
		return err
	}

	// The due fires: those older than the window are missed; of the rest
	// the last MaxCatchupRuns are kept and the older ones missed too.
	windowStart := now.Add(-rec.window())
	n := *rec.NextFireAt
	var missed skipSpan
	for steps := 0; !n.IsZero() && n.Before(windowStart) && !rec.due(tenant, n).After(now); steps++ {
		missed.add(n)
		if steps >= fireBudget {
			n = tm.next(windowStart.Add(-time.Nanosecond))
			break
		}
		n = tm.next(n)
	}
	var due []time.Time
	for steps := 0; !n.IsZero() && !rec.due(tenant, n).After(now); steps++ {
		due = append(due, n)
		if len(due) > MaxCatchupRuns {
			missed.add(due[0])
			due = due[1:]
		}
		if steps >= fireBudget {
			n = tm.next(now)
			break
		}
		n = tm.next(n)
	}
	var coalesced int64
	if rec.Catchup == CatchupOne && len(due) > 1 {
		coalesced = int64(len(due) - 1)
		due = due[len(due)-1:]
	}
	if missed.count > 0 {
		if err := f.skip(SkipMissed, missed); err != nil {
			return err
		}
	}
	for _, at := range due {
		if until := rec.backoffUntil(); at.Before(until) {
			if err := f.skip(SkipBackoff, skipSpan{first: at, last: at, count: 1}); err != nil {
				return err
			}
			continue
		}
		if _, err := f.fire(at, TriggerSchedule, "", rec.Overlap, coalesced, false); err != nil {
			return err
		}
	}
	if n.IsZero() {
		rec.NextFireAt = nil
	} else {
		rec.NextFireAt = &n
	}
	return f.store()
}

// store writes the record back, or removes a one-shot schedule whose run
// was made, and tells the loop when it is next due.
func (f *firing) store() error {
	if f.rec.At != nil && f.made {
		if err := f.tx.Records().ScheduleDelete(f.tenant, f.rec.ID); err != nil {
			return err
		}
		f.s.track(f.tx, f.tenant, f.rec.ID, nil)
		return nil
	}
	if err := f.tx.Records().SchedulePut(f.tenant, f.rec.ID, f.rec); err != nil {
		return err
	}
	f.s.track(f.tx, f.tenant, f.rec.ID, f.rec)
	return nil
}

// settle takes the outcome of each pending run that is over into the
// failure count, in fire order: a done run resets it, a failed or dead one
// adds one; cancelled and deleted runs count neither way. The stranded
// steps of a chain that stopped are cancelled, so that nothing waits on
// them (a queued run behind it).
func (f *firing) settle() error {
	return settle(f.tx, f.tenant, f.rec, func(st runState) error {
		reason := fmt.Sprintf("an earlier step of the chain ended %s", st.status)
		for _, id := range st.stranded {
			n, err := f.tx.NodeGet(f.tenant, id)
			if err != nil || n.Status.Terminal() {
				continue
			}
			if _, err := f.s.nodes.CancelTx(f.tx, caller(f.tenant, f.rec.ID), id, reason); err != nil {
				return err
			}
		}
		return nil
	})
}

// settle is the failure count's part of firing.settle; over, when not nil,
// is called with each run found over.
func settle(tx *graphstore.Tx, tenant string, rec *Record, over func(runState) error) error {
	var keep []RunRef
	for _, p := range rec.Pending {
		st, err := stateOf(tx, tenant, p.Nodes)
		if err != nil {
			return err
		}
		if st.over && over != nil && len(st.stranded) > 0 {
			if err := over(st); err != nil {
				return err
			}
		}
		switch {
		case !st.over:
			keep = append(keep, p)
		case st.status == RunDone:
			rec.Failures, rec.LastFailureAt = 0, nil
		case st.failed():
			end := st.endedAt
			rec.Failures++
			rec.LastFailureAt = &end
		}
	}
	rec.Pending = keep
	return nil
}

// skipSpan is a row of fires skipped for one reason.
type skipSpan struct {
	first, last time.Time
	count       int64
}

func (sp *skipSpan) add(at time.Time) {
	if sp.count == 0 {
		sp.first = at
	}
	sp.last = at
	sp.count++
}

// skip records fires that made no run. When the newest record is a skip
// for the same reason, it is extended instead, so a long overlap or backoff
// is one record.
func (f *firing) skip(reason SkipReason, sp skipSpan) error {
	rec := f.rec
	if rec.LastSeq > 0 {
		var prev Run
		ok, err := f.tx.Records().ScheduleRunGet(f.tenant, rec.ID, rec.LastSeq, &prev)
		if err != nil {
			return err
		}
		// Only a row that this span continues: the first fire it skips is
		// the one after the row's last.
		if ok && prev.Skipped == reason && prev.LastScheduledAt != nil && f.follows(*prev.LastScheduledAt, sp.first) {
			prev.Count += sp.count
			last := sp.last
			prev.LastScheduledAt = &last
			return f.tx.Records().ScheduleRunPut(f.tenant, rec.ID, prev.Seq, &prev)
		}
	}
	last := sp.last
	return f.addRun(&Run{
		Trigger: TriggerSchedule, ScheduledAt: sp.first, FiredAt: f.now.UTC(),
		Skipped: reason, Count: sp.count, LastScheduledAt: &last,
	})
}

// follows reports whether fire b comes right after fire a.
func (f *firing) follows(a, b time.Time) bool {
	tm, err := f.rec.timing()
	return err == nil && tm.next(a).Equal(b)
}

// addRun stores r under the next seq and drops the record that falls out
// of the history.
func (f *firing) addRun(r *Run) error {
	rec := f.rec
	rec.LastSeq++
	r.Seq = rec.LastSeq
	if err := f.tx.Records().ScheduleRunPut(f.tenant, rec.ID, r.Seq, r); err != nil {
		return err
	}
	if r.Seq > HistoryLimit {
		return f.tx.Records().ScheduleRunDelete(f.tenant, rec.ID, r.Seq-HistoryLimit)
	}
	return nil
}

// fire runs the schedule for the fire at nominal instant at under overlap:
// a skipped fire is recorded (or, when refuse is set, a manual trigger is
// refused with a conflict); otherwise the run's nodes are made. It returns
// the run record.
func (f *firing) fire(at time.Time, trig Trigger, by string, overlap Overlap, coalesced int64, refuse bool) (*Run, error) {
	rec, tx := f.rec, f.tx
	c := caller(f.tenant, rec.ID)
	var after, cancelled []string
	if rec.Last != nil {
		last, err := stateOf(tx, f.tenant, rec.Last.Nodes)
		if err != nil {
			return nil, err
		}
		busy := !last.over
		if busy && overlap == OverlapBufferOne {
			waiting, err := stateOf(tx, f.tenant, rec.Last.After)
			if err != nil {
				return nil, err
			}
			// Only a run that waits behind another fills the buffer.
			if len(rec.Last.After) > 0 && !waiting.over {
				overlap = OverlapSkip
			}
		}
		switch {
		case !busy, overlap == OverlapAllow:
		case overlap == OverlapSkip:
			if refuse {
				return nil, &fault.Conflict{Reason: fmt.Sprintf("run %d of schedule %q is not over (overlap %s)", rec.Last.Seq, rec.ID, rec.Overlap)}
			}
			return nil, f.skip(SkipOverlap, skipSpan{first: at, last: at, count: 1})
		case overlap == OverlapQueue, overlap == OverlapBufferOne:
			after = last.live
		case overlap == OverlapCancelOther:
			reason := fmt.Sprintf("superseded by run %d of schedule %s", rec.LastSeq+1, rec.ID)
			for _, id := range last.live {
				n, err := tx.NodeGet(f.tenant, id)
				if err != nil {
					return nil, err
				}
				if n.Status.Terminal() {
					continue // cancelled with an earlier step of its chain
				}
				ids, err := f.s.nodes.CancelTx(tx, c, id, reason)
				if err != nil {
					return nil, err
				}
				cancelled = append(cancelled, ids...)
			}
		}
	}
	specs := append([]nodes.NodeSpec{rec.Template}, rec.Chain...)
	ids := make([]string, 0, len(specs))
	for i, spec := range specs {
		n, err := f.s.nodes.Prepare(c, spec, f.def, stepField(i))
		if err != nil {
			return nil, err
		}
		var deps []string
		if i > 0 {
			deps = []string{ids[i-1]}
		}
		if err := f.s.nodes.InsertTx(tx, c, n, deps); err != nil {
			return nil, err
		}
		ids = append(ids, n.ID)
	}
	for _, a := range after {
		e := &records.Edge{From: ids[0], Type: graphstore.EdgeDependsOn, To: a, CreatedBy: c.Sub,
			Props: map[string]any{"on_fail": nodes.OnFailIgnore}}
		if err := tx.EdgeInsert(f.tenant, e); err != nil {
			return nil, err
		}
	}
	r := &Run{
		Trigger: trig, ScheduledAt: at.UTC(), FiredAt: f.now.UTC(), By: by,
		Nodes: ids, After: after, Cancelled: cancelled, Coalesced: coalesced,
	}
	if err := f.addRun(r); err != nil {
		return nil, err
	}
	ref := RunRef{Seq: r.Seq, Nodes: ids, After: after}
	rec.Last = &ref
	rec.Pending = append(rec.Pending, ref)
	if len(rec.Pending) > maxPending {
		rec.Pending = rec.Pending[len(rec.Pending)-maxPending:]
	}
	f.made = true
	return r, nil
}

// stepField names step i of a run in an error: the template, then the chain.
func stepField(i int) string {
	if i == 0 {
		return "template."
	}
	return fmt.Sprintf("chain[%d].", i-1)
}
