package indexes

// What the lifecycle did to each queue, for per-queue metrics. Every status
// change of a node passes through Table.Fold, on the writer, with the node's
// state before and after the transaction, and every transaction's events are
// there too: fold is the one place that stamps when a node became ready or
// was claimed (NodeState.since) and that tells a QueueMeter what happened,
// once the transaction is durable. The meter keeps its own totals; the store
// keeps none of them.

import (
	"time"

	"github.com/tether-run/tether/internal/records"
)

// QueueOutcome is what happened to a node of a queue.
type QueueOutcome uint8

// The outcomes a QueueMeter is told of.
const (
	// QueueClaimed: a node went from ready to running; Took is how long it
	// was claimable (since it became ready, or since its run_at when that
	// came later).
	QueueClaimed QueueOutcome = iota + 1
	// QueueRunEnded: a node left running for any reason (completed,
	// failed, released, expired, cancelled); Took is how long it ran since
	// it was claimed.
	QueueRunEnded
	// QueueCompleted, QueueFailed, QueueDead and QueueExpired count the
	// completed, failed, dead and expired events of the queue's nodes (a
	// failure that is retried counts as a failure; an expiry that ends a
	// node's attempts counts as an expiry and a dead letter).
	QueueCompleted
	QueueFailed
	QueueDead
	QueueExpired
	// QueueCreated counts the created events of the queue's nodes.
	QueueCreated
	// QueueLapsed counts the node_expired events of the queue's nodes:
	// nodes that ended expired, not claimed by their start_by.
	QueueLapsed
)

// QueueObservation is one outcome of one node of a queue.
type QueueObservation struct {
	Tenant, Queue string
	What          QueueOutcome
	Took          time.Duration // QueueClaimed and QueueRunEnded only
}

// QueueMeter is told what each durable transaction did to the nodes of
// queues (nodes in no queue are left out).
type QueueMeter interface {
	// QueueObserved runs once the transaction is durable, in commit order,
	// on the store's durable-hook goroutine: it must be quick, must not
	// keep obs, and must not call the store.
	QueueObserved(obs []QueueObservation)
}

// sinceOf is st's since: now when the node has just become ready or been
// claimed, else what it was.
func sinceOf(old, st *NodeState, now int64) int64 {
	switch {
	case st.Status == codeRunning && (old == nil || old.Status != codeRunning):
		return now
	case st.ready() && (old == nil || !old.ready()):
		return now
	case old != nil:
		return old.since
	}
	return now
}

// appendMoves adds the claim or the end of a run that moving a node from
// old to st is (nil: no node).
func appendMoves(obs []QueueObservation, ref NodeRef, old, st *NodeState, now int64) []QueueObservation {
	if old == nil {
		return obs
	}
	wasRunning, isRunning := old.Status == codeRunning, st != nil && st.Status == codeRunning
	switch {
	case !wasRunning && isRunning && st.queue != (atom{}):
		from := max(old.since, old.runAt*int64(time.Millisecond))
		obs = append(obs, QueueObservation{Tenant: ref.Tenant, Queue: st.queue.String(), What: QueueClaimed, Took: took(from, now)})
	case wasRunning && !isRunning && old.queue != (atom{}):
		obs = append(obs, QueueObservation{Tenant: ref.Tenant, Queue: old.queue.String(), What: QueueRunEnded, Took: took(old.since, now)})
	}
	return obs
}

// took is now-from, never negative (a clock set back, a rebuilt stamp).
func took(from, now int64) time.Duration {
	if from <= 0 || now < from {
		return 0
	}
	return time.Duration(now - from)
}

// appendOutcomes adds the outcomes a transaction's events name, for the
// nodes still in the table (call from fold, with mu held).
func (t *Table) appendOutcomes(obs []QueueObservation, events []records.Event) []QueueObservation {
	for i := range events {
		ev := &events[i]
		var what QueueOutcome
		switch ev.Type {
		case records.EventCreated:
			what = QueueCreated
		case records.EventCompleted:
			what = QueueCompleted
		case records.EventFailed:
			what = QueueFailed
		case records.EventDead:
			what = QueueDead
		case records.EventExpired:
			what = QueueExpired
		case records.EventNodeExpired:
			what = QueueLapsed
		default:
			continue
		}
		e, ok := t.Nodes.Get(NodeRef{ev.Tenant, ev.NodeID})
		if !ok || e.State.queue == (atom{}) {
			continue
		}
		obs = append(obs, QueueObservation{Tenant: ev.Tenant, Queue: e.State.queue.String(), What: what})
	}
	return obs
}

// EachQueueStat calls fn with every queue of every tenant that holds nodes:
// its node counts by status (as durable; fn must not keep or change the
// map), how many of them are claimable now and when the oldest of those was
// created (zero when none). It walks the queues the ready mirror holds, not
// the nodes, under the mirror's lock: fn must be quick and must not call the
// store.
func (m *ReadyMirror) EachQueueStat(fn func(tenant, queue string, counts map[records.Status]int64, ready int, oldestReady time.Time)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.promoteLocked(m.clock.Now().UnixMilli())
	for t, q := range m.queues {
		if len(q.shown) == 0 {
			continue
		}
		var oldest time.Time
		if c, ok := q.oldestCreated(); ok {
			oldest = time.Unix(0, c).UTC()
		}
		fn(t.Tenant, t.Queue, q.shown, q.claimable, oldest)
	}
}
