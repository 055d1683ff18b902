package queuemetrics

import (
	"container/list"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/indexes"
)

// The throughput history: per queue, how many nodes were created, completed
// and failed, and how many claims flow control held back, in each of the
// last Minutes minutes, kept in memory by the
// meter as the store tells it of each durable transaction. It serves the
// API's throughput view (a tenant reads its own queues) without a
// Prometheus; it starts empty when the server starts.
//
// It is keyed by the real tenant, never by the label values: the caps of
// the labels fold tenants together under "other", and a tenant must never
// read another's counts. Its own bounds keep every tenant apart:
//   - per tenant, at most Limits.MaxQueues queues have a history of their
//     own at once; the tenant's other queues share one, the tenant's own
//     "other" (their reads say shared), as does a queue named "other";
//   - in all, at most MaxHistories histories are kept; past that the one
//     counted least recently is dropped, and a history with nothing in the
//     last hour is dropped as soon as another is counted. A dropped
//     history reads as zeros: less than there was, never someone else's.

// Minutes is how far back the history goes.
const Minutes = 60

// MaxHistories bounds the histories kept in all: about 1 KiB each.
const MaxHistories = 10000

// Minute is one minute of a queue's history.
type Minute struct {
	At                         time.Time // the minute's start
	Created, Completed, Failed int64
	// Throttled counts the claims of the queue that flow control held
	// back (ClaimThrottled).
	Throttled int64
}

// minuteCounts is one slot of a ring: the minute it holds (Unix minutes,
// which fit 32 bits for four thousand years) and its counts.
type minuteCounts struct {
	minute                                int32
	created, completed, failed, throttled uint32
}

// history is one queue's ring of the last Minutes minutes.
type history [Minutes]minuteCounts

// at returns the slot of minute, emptied when it held an older one.
func (h *history) at(minute int32) *minuteCounts {
	c := &h[minute%Minutes]
	if c.minute != minute {
		*c = minuteCounts{minute: minute}
	}
	return c
}

// historyKey names a history: a tenant and its queue, or Other for the
// tenant's queues past its cap.
type historyKey struct{ tenant, queue string }

// historyEntry is one history and the newest minute it counted.
type historyEntry struct {
	key  historyKey
	ring history
	last int32
}

// histories are the throughput histories within their bounds.
type histories struct {
	maxQueues, max int

	mu    sync.Mutex
	byKey map[historyKey]*list.Element // of *historyEntry
	lru   list.List                    // front: counted most recently
	// own counts each tenant's queues with a history of their own.
	own map[string]int
}

func newHistories(maxQueues, max int) *histories {
	return &histories{maxQueues: maxQueues, max: max, byKey: map[historyKey]*list.Element{}, own: map[string]int{}}
}

// find returns the history that counts tenant's queue (nil when none has
// yet) and the key it has or would have; call with mu held.
func (h *histories) find(tenant, queue string) (*list.Element, historyKey) {
	k := historyKey{tenant, queue}
	if el, ok := h.byKey[k]; ok {
		return el, k
	}
	if h.own[tenant] >= h.maxQueues {
		k.queue = Other
	}
	return h.byKey[k], k
}

// count adds one outcome at now to tenant's queue; call with mu held.
func (h *histories) count(tenant, queue string, what indexes.QueueOutcome, now time.Time) {
	switch what {
	case indexes.QueueCreated, indexes.QueueCompleted, indexes.QueueFailed:
	default:
		return
	}
	c := h.slot(tenant, queue, now)
	switch what {
	case indexes.QueueCreated:
		c.created++
	case indexes.QueueCompleted:
		c.completed++
	case indexes.QueueFailed:
		c.failed++
	}
}

// slot is the counts of tenant's queue for the minute of now, its history
// made (within the bounds) or moved to the front; call with mu held.
func (h *histories) slot(tenant, queue string, now time.Time) *minuteCounts {
	minute := int32(now.Unix() / 60)
	h.dropIdle(minute)
	el, k := h.find(tenant, queue)
	if el == nil {
		if h.lru.Len() >= h.max {
			h.drop(h.lru.Back())
		}
		el = h.lru.PushFront(&historyEntry{key: k})
		h.byKey[k] = el
		if k.queue != Other {
			h.own[tenant]++
		}
	} else {
		h.lru.MoveToFront(el)
	}
	e := el.Value.(*historyEntry)
	e.last = max(e.last, minute)
	return e.ring.at(minute)
}

// dropIdle drops the histories with nothing in the hour before minute:
// they read as zeros anyway.
func (h *histories) dropIdle(minute int32) {
	for el := h.lru.Back(); el != nil && el.Value.(*historyEntry).last <= minute-Minutes; el = h.lru.Back() {
		h.drop(el)
	}
}

func (h *histories) drop(el *list.Element) {
	e := h.lru.Remove(el).(*historyEntry)
	delete(h.byKey, e.key)
	if e.key.queue != Other {
		if h.own[e.key.tenant]--; h.own[e.key.tenant] == 0 {
			delete(h.own, e.key.tenant)
		}
	}
}

// Throughput returns the history of tenant's queue, oldest minute first,
// the current one last: Minutes minutes, zero where nothing happened.
// shared says the queue is past its tenant's cap, so its numbers are those
// of every queue of the tenant counted with it under "other". No other
// tenant's counts are ever in them, whatever the label caps.
func (m *Meter) Throughput(tenant, queue string) (minutes []Minute, shared bool) {
	now := m.store.Clock().Now().Unix() / 60
	h := m.history
	h.mu.Lock()
	defer h.mu.Unlock()
	el, k := h.find(tenant, queue)
	shared = k.queue == Other && queue != Other
	var e *historyEntry
	if el != nil {
		e = el.Value.(*historyEntry)
	}
	minutes = make([]Minute, Minutes)
	for i := range minutes {
		minute := now - Minutes + 1 + int64(i)
		minutes[i].At = time.Unix(minute*60, 0).UTC()
		if e == nil {
			continue
		}
		if c := e.ring[minute%Minutes]; int64(c.minute) == minute {
			minutes[i].Created, minutes[i].Completed, minutes[i].Failed = int64(c.created), int64(c.completed), int64(c.failed)
			minutes[i].Throttled = int64(c.throttled)
		}
	}
	return minutes, shared
}
