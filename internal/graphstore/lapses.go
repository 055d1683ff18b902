package graphstore

import (
	"sync"
	"time"

	"github.com/tether-run/tether/internal/deadline"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/records"
)

// lapses are the nodes written at rest with a start_by, in an indexed heap
// by start_by (package deadline), so the node that lapses next is found
// without a walk. An entry is set when such a node commits (Tx.NoteStartBy,
// from every node write) and at open (derive); nothing removes it but the
// reaper that takes it (LapsesForget): it is a hint, and the node's record
// decides whether it has lapsed (records.Node.Lapsed). A node claimed,
// deleted or requeued since leaves a stale entry that costs one read when
// its instant comes.
type lapses struct {
	mu   sync.Mutex
	h    deadline.Heap[indexes.NodeRef]
	wake chan struct{} // cap 1: the earliest start_by moved earlier
}

func newLapses() *lapses { return &lapses{wake: make(chan struct{}, 1)} }

func (l *lapses) set(ref indexes.NodeRef, at time.Time) {
	l.mu.Lock()
	earliest := l.h.Set(ref, at)
	l.mu.Unlock()
	if earliest {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// NoteStartBy files n in the lapses once the transaction commits, when it
// is at rest with a start_by. Every write of a node calls it; the reaper
// calls it for a node it finds filed under an older instant.
func (tx *Tx) NoteStartBy(n *records.Node) {
	if n.StartBy == nil || !n.Status.AtRest() {
		return
	}
	ref, at, l := indexes.NodeRef{Tenant: n.Tenant, ID: n.ID}, *n.StartBy, tx.store.lapses
	tx.OnCommit(func() { l.set(ref, at) })
}

// LapsesDue returns up to max nodes whose start_by is at or before now,
// earliest first, without removing them.
func (s *Store) LapsesDue(now time.Time, max int) []indexes.NodeRef {
	s.lapses.mu.Lock()
	defer s.lapses.mu.Unlock()
	return s.lapses.h.Due(now, max)
}

// LapsesNext returns the earliest start_by filed.
func (s *Store) LapsesNext() (time.Time, bool) {
	s.lapses.mu.Lock()
	defer s.lapses.mu.Unlock()
	_, at, ok := s.lapses.h.Peek()
	return at, ok
}

// LapsesForget removes ref from the lapses, once its start_by came and its
// record was settled (lapsed, or found no longer lapsing).
func (s *Store) LapsesForget(ref indexes.NodeRef) {
	s.lapses.mu.Lock()
	defer s.lapses.mu.Unlock()
	s.lapses.h.Remove(ref)
}

// LapsesWake fires when a start_by earlier than every other is filed, so a
// reaper sleeping towards a later one wakes.
func (s *Store) LapsesWake() <-chan struct{} { return s.lapses.wake }

// LapsesLen is how many nodes are filed (stale ones included).
func (s *Store) LapsesLen() int {
	s.lapses.mu.Lock()
	defer s.lapses.mu.Unlock()
	return s.lapses.h.Len()
}
