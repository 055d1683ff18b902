package queuemetrics

import (
	"time"

	"github.com/tether-run/tether/internal/indexes"
)

// The throughput history: per queue, how many nodes were created, completed
// and failed in each of the last Minutes minutes, kept in memory by the
// meter as the store tells it of each durable transaction. It serves the
// dashboard's throughput view without a Prometheus; it starts empty when
// the server starts.

// Minutes is how far back the history goes.
const Minutes = 60

// Minute is one minute of a queue's history.
type Minute struct {
	At                         time.Time // the minute's start
	Created, Completed, Failed int64
}

// minuteCounts is one slot of a ring: the minute it holds (Unix minutes)
// and its counts.
type minuteCounts struct {
	minute                     int64
	created, completed, failed int64
}

// history is one label pair's ring of the last Minutes minutes.
type history [Minutes]minuteCounts

// at returns the slot of minute, emptied when it held an older one.
func (h *history) at(minute int64) *minuteCounts {
	c := &h[minute%Minutes]
	if c.minute != minute {
		*c = minuteCounts{minute: minute}
	}
	return c
}

// count adds one outcome at now to k's history (call with labels.mu held).
func (m *Meter) count(k labelKey, what indexes.QueueOutcome, now time.Time) {
	var field func(*minuteCounts) *int64
	switch what {
	case indexes.QueueCreated:
		field = func(c *minuteCounts) *int64 { return &c.created }
	case indexes.QueueCompleted:
		field = func(c *minuteCounts) *int64 { return &c.completed }
	case indexes.QueueFailed:
		field = func(c *minuteCounts) *int64 { return &c.failed }
	default:
		return
	}
	h, ok := m.history[k]
	if !ok {
		h = new(history)
		m.history[k] = h
	}
	*field(h.at(now.Unix() / 60))++
}

// Throughput returns the history of tenant's queue, oldest minute first,
// the current one last: Minutes minutes, zero where nothing happened.
// shared says the queue is past the label caps, so its numbers are those
// of every queue counted with it under "other".
func (m *Meter) Throughput(tenant, queue string) (minutes []Minute, shared bool) {
	now := m.store.Clock().Now().Unix() / 60
	m.labels.mu.Lock()
	defer m.labels.mu.Unlock()
	k := m.labels.peek(tenant, queue)
	shared = k.queue == Other && queue != Other
	h := m.history[k]
	minutes = make([]Minute, Minutes)
	for i := range minutes {
		minute := now - Minutes + 1 + int64(i)
		minutes[i].At = time.Unix(minute*60, 0).UTC()
		if h == nil {
			continue
		}
		if c := h[minute%Minutes]; c.minute == minute {
			minutes[i].Created, minutes[i].Completed, minutes[i].Failed = c.created, c.completed, c.failed
		}
	}
	return minutes, shared
}
