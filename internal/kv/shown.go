package kv

// Writes shown before they are durable. UpdateEager's writes (lease
// renewals) are shown to readers as soon as they are applied, so a read that
// starts after a renewal's answer sees it. Everything else reaches readers
// only once durable.
//
// A write may be shown early only if readers already see the state it was
// applied on: for every key it writes, the writer's previous value of that
// key is visible (durable, or itself shown). Otherwise showing it would show
// the earlier, not yet durable write with it (the claim a renewal renews, say):
// such a write is answered and shown once durable instead, like any other.
// The closure of an UpdateEager must read nothing but the keys it writes (or
// rest its answer on nothing else), which is what makes that check enough.
//
// Each segment keeps the writes shown from it in a map of its own (shown),
// which readers read under its lock while the writer adds to it. The store
// lists the segments with shown writes that are not durable yet (Store.shown);
// the logger takes a segment off that list as it adds it to the visible ones,
// under one lock, so a reader finds a shown write either there or, newer,
// in its segment's overlay. Every segment on the list is newer than every
// visible one, so a View reads the list (newest first) before them.

import "sync"

// shownWrites are a segment's writes shown to readers before the segment is
// durable: the value each key had when it was shown (its Txn id kept).
type shownWrites struct {
	mu   sync.RWMutex
	vals map[string]value
}

func (w *shownWrites) get(key string) (value, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	v, ok := w.vals[key]
	return v, ok
}

func (w *shownWrites) under(prefix string) []string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	o := overlay{vals: w.vals}
	return o.under(prefix)
}

// seen reports whether readers see the writer's latest value of key before
// t: t's segment wrote it last (prev) and showed that value, or an earlier
// segment wrote it last and is durable or showed that value, or no segment
// in flight holds it. Called on the writer.
func (g *segment) seen(f *inflight, u undoEntry) bool {
	if u.had {
		return f.shownTxn(u.key) == u.prev.txn
	}
	p := g.s.pend
	for i := len(p) - 1; i >= 0; i-- {
		v, ok := p[i].over.vals[u.key]
		if !ok {
			continue
		}
		return p[i].logged.Load() || p[i].shownTxn(u.key) == v.txn
	}
	return true
}

// shownTxn is the Txn id of the value of key shown from f (0: none). Only
// the writer, which alone adds to the map, calls it.
func (f *inflight) shownTxn(key string) uint64 {
	if f.shown == nil {
		return 0
	}
	return f.shown.vals[key].txn
}

// showable reports whether t's writes may be shown now: readers see every
// key it wrote as it was before t.
func (g *segment) showable(f *inflight, t *Txn) bool {
	for _, u := range t.undo {
		if !g.seen(f, u) {
			return false
		}
	}
	return true
}

// show shows t's writes to readers: they go into f's shown writes, and f
// onto the store's list of segments with shown writes (once). A segment on
// the list is always handed to the logger (runSegment), so it leaves the
// list once durable: one that stayed would hide the later writes of every
// segment logged after it.
func (s *Store) show(f *inflight, t *Txn) {
	if len(t.undo) == 0 {
		return // nothing written: nothing to show, and no segment to list
	}
	if f.shown == nil {
		f.shown = &shownWrites{vals: map[string]value{}}
		s.visMu.Lock()
		s.shown = append(s.shown, f)
		s.visMu.Unlock()
	}
	f.shown.mu.Lock()
	for _, u := range t.undo {
		f.shown.vals[u.key] = t.w.over.vals[u.key]
	}
	f.shown.mu.Unlock()
}

// unshow takes the durable segments at the head of the shown list off it
// (call with visMu held, once they are marked logged and visible).
func (s *Store) unshow() {
	n := 0
	for n < len(s.shown) && s.shown[n].logged.Load() {
		n++
	}
	if n > 0 {
		clear(s.shown[:n])
		s.shown = s.shown[n:]
	}
}
