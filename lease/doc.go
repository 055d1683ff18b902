// Package lease grants and ends leases: claim, renew, extend, release,
// fencing, expiry, the deadline heap and the reaper.
//
// A lease lives inside its node record (one write per claim). The node's
// status moves like this; every arrow is one transaction with its event:
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
//	                                                           │ complete (package work)
//	                                                           ├──────────────▶ done
//	                                                           │ cancel (package work)
//	                                                           └──────────────▶ cancelled
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
//   - Renewals are answered before they are durable (graph.UpdateEager); the
//     rule below is what makes that safe.
//   - On Start (a restart, or a new owner of an etcd shard), every lease
//     that the previous server may have renewed in a write it answered and
//     did not make durable gets its full TTL afresh from now: every lease
//     whose stored expiry is after the newest claimed_at/renewed_at stored
//     (the renewal horizon, expire.go). Its holder could not renew while no
//     server served it, and the previous server answered nothing after now,
//     so no lease ends before the expiry its holder was last told. A lease
//     whose stored expiry is not after the horizon ended then, as its
//     readers were told, and is reaped at once.
//   - The deadline heap is a hint for the reaper, kept in step after each
//     commit; the node record is the authority.
package lease
