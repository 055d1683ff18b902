package indexes

// readyWaiter is one long-polling claimer of a queue; ch is closed once, by
// the first claimable node its filter matches or by Kick.
type readyWaiter struct {
	f  ReadyFilter
	ch chan struct{}
}

type waiterSet map[*readyWaiter]struct{}

// waitIndex files a queue's waiters so that a node becoming claimable looks
// only at those it may wake: a targeted node at the waiters of its target; an
// untargeted one at the waiters filed under its type, under one of its
// labels, or under nothing. A waiter with types is filed under each of them
// (a node has one type); one with labels only, under its first label (a node
// must carry them all). A poll that filters on a type or a label so is never
// woken, nor looked at, by the flow of nodes it does not want.
type waitIndex struct {
	bySub   map[string]waiterSet // every waiter, by its claimer
	any     waiterSet            // waiters with neither types nor labels
	byType  map[string]waiterSet
	byLabel map[string]waiterSet
	waiting int
	woken   int64
}

func (w *waitIndex) file(r *readyWaiter) {
	if w.bySub == nil {
		w.bySub, w.any = map[string]waiterSet{}, waiterSet{}
		w.byType, w.byLabel = map[string]waiterSet{}, map[string]waiterSet{}
	}
	fileUnder(w.bySub, r.f.Sub, r)
	switch {
	case len(r.f.Types) > 0:
		for _, t := range r.f.Types {
			fileUnder(w.byType, t, r)
		}
	case len(r.f.Labels) > 0:
		fileUnder(w.byLabel, r.f.Labels[0], r)
	default:
		w.any[r] = struct{}{}
	}
	w.waiting++
}

// unfile takes r out of the index and reports whether it was there.
func (w *waitIndex) unfile(r *readyWaiter) bool {
	if _, ok := w.bySub[r.f.Sub][r]; !ok {
		return false
	}
	unfileUnder(w.bySub, r.f.Sub, r)
	switch {
	case len(r.f.Types) > 0:
		for _, t := range r.f.Types {
			unfileUnder(w.byType, t, r)
		}
	case len(r.f.Labels) > 0:
		unfileUnder(w.byLabel, r.f.Labels[0], r)
	default:
		delete(w.any, r)
	}
	w.waiting--
	return true
}

func fileUnder(sets map[string]waiterSet, key string, r *readyWaiter) {
	s, ok := sets[key]
	if !ok {
		s = waiterSet{}
		sets[key] = s
	}
	s[r] = struct{}{}
}

func unfileUnder(sets map[string]waiterSet, key string, r *readyWaiter) {
	if s, ok := sets[key]; ok {
		delete(s, r)
		if len(s) == 0 {
			delete(sets, key)
		}
	}
}

// wake ends the waits of the waiters that may claim it (call with the
// mirror's mu held).
func (w *waitIndex) wake(it *NodeEntry) {
	if w.waiting == 0 {
		return
	}
	var hit []*readyWaiter
	consider := func(s waiterSet) {
		for r := range s {
			if r.f.matches(it) {
				hit = append(hit, r)
			}
		}
	}
	if target := it.State.target.String(); target != "" {
		consider(w.bySub[target])
	} else {
		consider(w.any)
		consider(w.byType[it.State.typ.String()])
		for l := range it.State.labels.eachLabel() {
			consider(w.byLabel[l])
		}
	}
	for _, r := range hit {
		w.end(r) // a waiter filed under two of the item's labels is hit twice
	}
}

// wakeAll ends every wait.
func (w *waitIndex) wakeAll() {
	for _, s := range w.bySub {
		for r := range s {
			w.end(r)
		}
	}
}

func (w *waitIndex) end(r *readyWaiter) {
	if w.unfile(r) {
		close(r.ch)
		w.woken++
	}
}

// Watch files a waiter for f on a queue; graphstore's Store.ReadyWatch.
func (m *ReadyMirror) Watch(tenant, queue string, f ReadyFilter) (<-chan struct{}, func()) {
	f = f.normal()
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(TenantQueue{tenant, queue})
	r := &readyWaiter{f: f, ch: make(chan struct{})}
	q.waiters.file(r)
	stop := func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		q.waiters.unfile(r)
		m.dropIfIdle(TenantQueue{tenant, queue}, q)
	}
	return r.ch, stop
}

func (m *ReadyMirror) WaitStats(tenant, queue string) (int, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q, ok := m.queues[TenantQueue{tenant, queue}]; ok {
		return q.waiters.waiting, q.waiters.woken
	}
	return 0, 0
}
