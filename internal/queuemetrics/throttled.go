package queuemetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tether-run/tether/internal/fault"
)

// Claims that flow control held back: a claim of a queue's next nodes
// (claim-next, claims) that handed nothing out because a concurrency limit,
// a start rate or a usage budget stood in the way (a 204 with
// Tether-Throttled). They write nothing, so no durable transaction tells
// the meter of them: the API's claim handlers call ClaimThrottled instead.
// A claim of a node by id refused the same way (409) is not counted here:
// it names no queue until the node is read.

// throttledVec is tether_claims_throttled_total.
func throttledVec() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_claims_throttled_total",
		Help: "Claims of the queue's nodes that flow control held back, by reason: concurrency_limited, start_rate_limited or budget_exhausted.",
	}, []string{"tenant", "queue", "reason"})
}

// ClaimThrottled counts one claim of tenant's queue that flow control held
// back for reason, in the series (under the label caps) and in the queue's
// throughput history. A reason other than the three is counted as
// "other", so a caller's mistake cannot grow the series.
func (m *Meter) ClaimThrottled(tenant, queue, reason string) {
	switch reason {
	case fault.ThrottleConcurrency, fault.ThrottleRate, fault.ThrottleBudget:
	default:
		reason = Other
	}
	now := m.store.Clock().Now()
	m.labels.mu.Lock()
	k := m.labels.label(tenant, queue)
	m.labels.mu.Unlock()
	m.throttled.WithLabelValues(k.tenant, k.queue, reason).Inc()
	m.history.mu.Lock()
	defer m.history.mu.Unlock()
	m.history.slot(tenant, queue, now).throttled++
}
