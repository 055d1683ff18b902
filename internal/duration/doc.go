// Package duration holds the one documented range of every millisecond field
// a client can send (ttl_ms, ms, wait_ms, timeout_ms, delay_ms, retry_in_ms,
// backoff initial_ms and max_ms, the policy's claim_ttl_*_ms, a create's
// unique window_ms, debounce_ms and queue_ttl_ms), and the only
// conversion from milliseconds to time.Duration.
//
// Invariants:
//   - A field name has one range wherever it appears: the range is looked up
//     by the field's JSON name (its last path element), so a body that nests
//     a create (a batch item, a schedule's template) gets the same rule.
//   - A name ending in _ms that the table does not list gets [0, MaxMS], so a
//     field added later is bounded before anyone remembers to list it.
//   - Every range lies within [0, MaxMS], and MaxMS milliseconds are far
//     below the 292 years a time.Duration holds: once checked, no ms→ns
//     conversion can wrap. FromMS saturates anyway, for records written
//     before the ranges existed.
package duration
