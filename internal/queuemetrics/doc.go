// Package queuemetrics is the per-queue series of /metrics: each queue's
// depth by status and the age of its oldest ready node (gauges), how long
// nodes waited from ready to claimed and ran from claimed to ended
// (histograms), its creations, completions, failures, dead letters and
// expiries, and the claims flow control held back, by reason (counters),
// labelled by tenant and queue, and the live leases per concurrency key
// (key_running.go), labelled by tenant and key under the same caps.
// docs/metrics.md lists them. The meter also
// keeps each queue's last hour of creations, completions, failures and
// throttled claims, minute by minute, for the API's throughput view
// (throughput.go), by tenant and queue, never by label.
//
// Where the numbers come from:
//   - The gauges are computed at scrape time from the store's in-memory
//     ready mirror (graphstore.Store.EachQueueStat): O(queues), never a read of
//     the store, whatever the number of nodes.
//   - The counters and histograms are fed by the store's QueueMeter hook
//     (internal/indexes/queue_meter.go), which the writer calls once per durable
//     transaction with what it did to each queue. No handler or domain
//     package counts anything itself, but for throttled claims, which write
//     nothing: the claim path calls ClaimThrottled (throttled.go), whose
//     reason label takes only the three flow-control codes (anything else
//     is "other").
//
// Invariants:
//   - Cardinality is bounded: at most Limits.MaxTenants tenants and, per
//     tenant, Limits.MaxQueues queues get label values of their own, first
//     come first served, and keep them for the life of the process. The
//     rest are counted under the label value "other" (tenant="other" and
//     queue="other" for a tenant past the cap; queue="other" for a queue
//     past its tenant's cap), so the series count is bounded by
//     (MaxTenants+1) x (MaxQueues+1) per metric (times the statuses for
//     depth, the buckets for histograms).
//   - The caps fold label values only, never what a tenant reads through
//     the API: the throughput history is keyed by the real tenant, with
//     bounds of its own (MaxQueues per tenant, MaxHistories in all, the
//     least recently counted dropped first), so a tenant's read holds its
//     own counts or fewer, never another tenant's.
//   - The series are for an operator's scrape: they name tenants and
//     queues, so package api serves them only to a scrape token or on the
//     metrics listener, never to an anonymous GET /metrics.
//   - Counters only grow: a queue that empties keeps its counters.
//   - A gauge of the "other" bucket sums (depth) or takes the largest
//     (oldest ready age) of the queues in it.
package queuemetrics
