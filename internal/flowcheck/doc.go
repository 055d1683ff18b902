// Package flowcheck checks recorded histories of lease grants against the
// flow-control promises of claim time: at no instant do more leases run
// with a concurrency key than its limit allows, and no token bucket grants
// more than rate × window + burst in any window. The process tests in
// cmd/tether drive real `tether serve` processes (Badger with kill -9
// restarts, etcd with owner kills), record every call here, and ask Check
// for violations.
//
// A history is client-observed: each call has the instant it was sent
// (Call) and the instant its answer came (Return), in Unix nanoseconds of
// the machine's clock, which the servers share. The server acted at one
// instant between the two, which the history does not know. The checker
// flags only what no placement of those instants can explain, so it never
// reports a violation that did not happen; what uncertainty hides it
// leaves unflagged, and the tests keep calls short beside lease lifetimes
// so that little is hidden.
//
// Running per key. A lease is identified by its node and fence (a re-claim
// by the holder, renewed, is the same lease). It is surely live on
//
//	[granted.Return, min(end.Call, expires − ClockSlack))
//
// where granted is the first answered call that showed it held (its
// grant: claim by id, claim-next, a claims batch, complete with next; or
// its holder's re-claim, when the grant's answer was lost), end is the
// first call that could have ended it (a release, complete or fail sent by
// its holder, whatever the answer, unknown included), and expires is the
// latest expiry its holder was told (by a grant, a re-claim or an answered
// renewal). Why each bound holds:
//   - The lease was held at that answer, and from its grant on.
//   - Only its holder's release, complete or fail, or its expiry, ends a
//     lease (the leasing contract; a hand-off keeps the lease, and the load
//     cancels nothing). The first such call cannot act before it is sent.
//   - A lease never ends before the expiry its holder was last told: a
//     restart gives every persisted lease its full TTL afresh, and on etcd
//     a new owner honours every renewal the old one could have answered.
//     ClockSlack covers the millisecond rounding of the told expiry and the
//     server's reading of the clock.
//
// The condition. Let S be leases carrying key k, all surely live at instant
// t, with |S| > limit(k). Each was granted at some g ≤ t and none ended
// before t. At the latest of those grants, g*, every other lease of S had
// been granted (g ≤ g*) and had not ended (its end is after t ≥ g*), so the
// grant at g* took k's running count from at least |S| − 1 ≥ limit(k) to
// |S|: the limit was exceeded. Hence a sweep over surely-live intervals
// that finds more than limit(k) of them overlapping at one instant is a
// proof of a violation, and one that finds none means no violation that
// the history can show. A sweep treats intervals as half-open, so one
// lease's sure end and another's sure start at the same nanosecond do not
// overlap.
//
// limit(k) is the least of every limit that applies to k: an exact limit on
// k and each prefix limit ("repo:*") whose prefix k starts with; a prefix
// limit bounds each distinct matching key on its own. Limits are fixed for
// the history (a test sets them before its load).
//
// Start rates. A bucket (a queue's, or a key's: exact, or each distinct key
// under a prefix) with rate r per second and burst b grants at most
// r × (t2 − t1) + b leases in any window [t1, t2], across restarts and
// takeovers. A grant is surely inside [t1, t2] when its call was sent at or
// after t1 and answered at or before t2; the count of such grants bounds
// the true count from below, so exceeding r × (t2 − t1 + ClockSlack) + b is
// a proof of a violation. Only the windows that begin at some grant's Call
// and end at some grant's Return can be the tightest, so the checker
// tries those. A renewal (a re-claim by the holder) is not a grant, and a
// lease whose grant went unanswered has no interval to place it in: it
// counts in no window.
//
// Invariants of the package:
//   - Check is pure: the same history and limits give the same report.
//   - Sound: every violation it reports is one that no placement of the
//     calls' instants within their intervals explains (the proofs above).
//   - Its own test feeds it hand-written histories (over the limit, over
//     the rate, at the exact boundary, ambiguous overlaps) and requires it
//     to flag exactly the illegal ones; and histories of a simulated server
//     that keeps its limits, each call's interval overlapping others, which
//     it must never flag, and must flag when told tighter limits.
package flowcheck
