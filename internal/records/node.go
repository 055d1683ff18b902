package records

// The statuses. open, queued and running are live; the rest are terminal.
const (
	StatusOpen      Status = "open"      // no queue, at rest
	StatusQueued    Status = "queued"    // waiting in its queue
	StatusRunning   Status = "running"   // a live lease
	StatusDone      Status = "done"      // completed
	StatusFailed    Status = "failed"    // failed without requeue
	StatusDead      Status = "dead"      // out of attempts
	StatusCancelled Status = "cancelled" // cancelled
)

// Statuses lists every status.
func Statuses() []Status {
	return []Status{StatusOpen, StatusQueued, StatusRunning, StatusDone, StatusFailed, StatusDead, StatusCancelled}
}

// Terminal reports whether no further run can happen without a requeue.
func (s Status) Terminal() bool {
	switch s {
	case StatusDone, StatusFailed, StatusDead, StatusCancelled:
		return true
	}
	return false
}

// AtRest reports whether a node in s waits to run (open or queued): the only
// statuses from which it can be ready or claimed.
func (s Status) AtRest() bool { return s == StatusOpen || s == StatusQueued }

// RestStatus is where n waits when it is not running: queued in its queue,
// or open without one.
func (n *Node) RestStatus() Status {
	if n.Queue != "" {
		return StatusQueued
	}
	return StatusOpen
}

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool {
	for _, v := range Statuses() {
		if s == v {
			return true
		}
	}
	return false
}

// Order is n's order key: priority descending, then creation ascending
// (OrderBytes).
func (n *Node) Order() []byte { return OrderBytes(n.Priority, n.CreatedAt.UnixNano()) }

// Clone returns a deep enough copy to mutate without touching n.
func (n *Node) Clone() *Node {
	c := *n
	c.Labels = append([]string(nil), n.Labels...)
	c.Blobs = append([]string(nil), n.Blobs...)
	c.ConcurrencyKeys = append([]string(nil), n.ConcurrencyKeys...)
	if n.Props != nil {
		c.Props = make(map[string]any, len(n.Props))
		for k, v := range n.Props {
			c.Props[k] = v
		}
	}
	if n.Lease != nil {
		l := *n.Lease
		c.Lease = &l
	}
	c.Usage = cloneUsage(n.Usage)
	c.UsageTotal = cloneUsage(n.UsageTotal)
	return &c
}

func cloneUsage(u map[string]float64) map[string]float64 {
	c := make(map[string]float64, len(u))
	for k, v := range u {
		c[k] = v
	}
	return c
}

// Clone returns a copy of e to mutate without touching e.
func (e *Edge) Clone() *Edge {
	c := *e
	c.Props = make(map[string]any, len(e.Props))
	for k, v := range e.Props {
		c.Props[k] = v
	}
	return &c
}
