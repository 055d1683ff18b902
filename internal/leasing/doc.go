// Package leasing grants and ends leases: claim, renew, extend, release,
// fencing, expiry, the deadline heap and the reaper.
//
// A lease lives inside its node record (one write per claim). The node's
// status is package lifecycle's: this package decides whether a claim, a
// release or an expiry may happen and what the lease becomes, and runs the
// transition (lifecycle.Claim, Release, Expire), which writes the status,
// the edges and the events. The part of the lifecycle that passes through a
// lease, each arrow one transaction with its event:
//
//	           claim (attempts+1, fence+1, assigned edge)
//	open/queued ───────────────────────────────────────────▶ running
//	     ▲                                                     │
//	     │ release (attempt given back; edge outcome released) │
//	     ├─────────────────────────────────────────────────────┤
//	     │ expiry or timeout while attempts < max_attempts     │
//	     └─────────────────────────────────────────────────────┤
//	                                                           │ expiry with attempts ≥ max_attempts
//	                                                           ├──────────────▶ dead
//	                                                           │ complete, fail, cancel (package nodes)
//	                                                           └──────────────▶ done, failed, dead, cancelled
//
// A claim of a node nobody holds is decided by the claimable rule
// (lifecycle.Claimable): the leasing package needs nothing from nodes to decide.
//
// Invariants:
//   - At most one live lease per node: every decision reads the node record
//     inside the store's single writer, so no two claims can both see it free.
//   - A lease is dead at its deadline (expiry, or claimed_at + timeout_ms when
//     that comes first) whether or not the reaper has run: Live compares with
//     the transaction's clock. A renewal racing an expiry loses.
//   - fence strictly increases per node: it is the node's LastFence + 1, kept
//     in the node record (and past deletion), so it survives restarts.
//   - A node never runs more than max_attempts times: a claim counts one; a
//     voluntary release gives it back; an expiry keeps it.
//   - Renewals are answered before they are durable (graphstore.UpdateEager), and
//     shown to readers as soon as they are applied, so a read that starts
//     after a renewal's answer shows its expiry (reads are linearizable). The
//     rule below is what makes that safe: a restart only ever lengthens a
//     live lease. A renewal of a claim not yet durable waits for it, so a
//     claim is never seen before it is durable. An extend is not a renewal
//     in that sense (it may reach past now + TTL, which a restart would
//     not give back, and it emits an event): it is durable, like a claim,
//     before it is answered or seen.
//   - On Start (a restart, or a new owner of an etcd shard), every lease
//     that the previous server may have renewed in a write it answered and
//     did not make durable gets its full TTL afresh from now: every lease
//     whose stored expiry is after the newest claimed_at/renewed_at stored
//     (the renewal horizon, expire.go). Its holder could not renew while no
//     server served it, and the previous server answered nothing after now,
//     so no lease ends before the expiry its holder was last told. A lease
//     whose stored expiry is not after the horizon ended then, as its
//     readers were told, and is reaped at once.
//   - The reaper is a startstop service: it runs between Start and Stop,
//     watches the stopping context, and tells a test each reap once
//     readers see it (TestSignals.Reaped).
//   - The deadline heap is a hint for the reaper, kept in step after each
//     commit; the node record is the authority. Every lease that ends, in
//     whichever package's transaction, ends through EndRun (the
//     lifecycle.Runs this package gives the transitions), which keeps the
//     heap and the per-identity counts in step.
//   - A run that expires into dead fails its parent when the parent asked
//     for it (lifecycle.Expire does); this package needs no hook from nodes.
package leasing
