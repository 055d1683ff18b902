package kv

// The logger: it makes the segments the writer hands over durable, in
// order, then shows them to readers, answers their callers, runs their
// OnDurable hooks and hands them to the applier.

import "github.com/tether-run/tether/internal/fault"

// logLoop makes the segments the writer hands over durable, in order: every
// segment waiting when a round starts shares one durable step.
func (s *Store) logLoop() {
	defer close(s.applyq)
	for f := range s.commq {
		if s.beforeDurable != nil {
			s.beforeDurable()
		}
		group := drain(s.commq, []*inflight{f})
		if err := s.logGroup(group); err != nil {
			s.fail(err)
			unavailable(group)
			continue
		}
		s.logged(group)
	}
}

// logged shows a durable group to readers (View), runs its OnDurable hooks,
// answers its callers and hands it to the applier, which applies it
// (engine.go). Its segments' writes shown early (shown.go) are now read
// from the segments themselves.
func (s *Store) logged(group []*inflight) {
	s.visMu.Lock()
	s.visible = append(s.visible, group...)
	for _, f := range group {
		f.logged.Store(true)
	}
	s.unshow()
	s.visMu.Unlock()
	for _, f := range group {
		for _, h := range f.onDurable {
			h()
		}
		for _, r := range f.waiting {
			r.err <- r.failed
		}
	}
	for _, f := range group {
		s.applyq <- f
	}
}

// unavailable answers the callers of segments that could not be made
// durable.
func unavailable(group []*inflight) {
	for _, f := range group {
		for _, r := range f.waiting {
			r.err <- fault.ErrUnavailable
		}
	}
}

// logGroup makes the group durable (engine.durable).
func (s *Store) logGroup(group []*inflight) error {
	if s.broken.Load() {
		return errBroken
	}
	return s.eng.durable(group)
}
