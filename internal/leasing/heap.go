package leasing

import (
	"sync"
	"time"

	"github.com/tether-run/tether/internal/deadline"
)

// nodeRef names one node of one tenant.
type nodeRef struct{ tenant, id string }

// deadlines is the lease deadlines in an indexed heap (package deadline),
// under a lock of its own. It is a hint for the reaper: the node record is
// the authority on whether a lease has ended.
type deadlines struct {
	mu sync.Mutex
	h  deadline.Heap[nodeRef]
}

func newDeadlines() *deadlines { return &deadlines{} }

// set adds or moves the deadline of ref; it reports whether ref is now the
// earliest deadline.
func (d *deadlines) set(ref nodeRef, at time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.h.Set(ref, at)
}

func (d *deadlines) remove(ref nodeRef) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.h.Remove(ref)
}

// next returns the earliest deadline.
func (d *deadlines) next() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, at, ok := d.h.Peek()
	return at, ok
}

// due returns up to max refs whose deadline is at or before now, earliest
// first, without removing them (the expiry transaction removes them).
func (d *deadlines) due(now time.Time, max int) []nodeRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.h.Due(now, max)
}
