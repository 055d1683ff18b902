// Package lease runs Tether in-process: Open opens a store in a directory
// (the same Badger store, with the same services and background work, that
// `tether serve` opens) and returns a Store on which a Go program creates
// nodes and claims, renews, extends, releases, completes and fails them, the
// way a worker does over the HTTP API — without a server.
//
// Open is the entry point: a program opens a Store first, then asks it for
// its Graph (package graph: queries, who carried what) and its Tenants
// (package tenant: policies and API keys). The Store sits above both because
// creating a node with its full semantics (queues, dependencies, parents,
// events, tenant defaults) and leasing it need the nodes and leasing services,
// which the read-only graph must not import.
//
// A lease is a term: a claim grants a *Lease naming the node, the worker and
// a fence; Renew, Extend, Release, Complete and Fail act on exactly that
// term and are refused with an error matching ErrLeaseLost (a
// *LeaseLostError) once another claim has taken the node, whatever the
// worker.
//
//	           Claim / ClaimNext (attempt+1, fence+1, an assigned edge)
//	open/queued ───────────────────────────────────────────▶ running
//	     ▲          Release (the attempt given back)           │ Renew, Extend
//	     ├─────────────────────────────────────────────────────┤
//	     │          expiry, or Fail while attempts remain      │
//	     └─────────────────────────────────────────────────────┤
//	                                                           ├─ Complete ─▶ done
//	                                                           ├─ Fail ─────▶ failed / dead
//	                                                           └─ expiry ───▶ dead (out of attempts)
//
// Invariants:
//   - At most one live lease per node; two racing claims: exactly one wins,
//     the other gets an error matching ErrHeld.
//   - Fences of a node strictly increase, across expiries, restarts and
//     deletion: a *Lease from an earlier claim never acts on a later one.
//   - A lease is dead at its expiry whether or not the reaper has run; a
//     Renew racing the expiry loses. Expired work goes back to its queue
//     (or dead, out of attempts) within Options.ReaperInterval.
//   - A claim's TTL is the tenant's default when none is asked and never
//     above the tenant's max (Lease.Capped says it was cut); package tenant
//     changes both.
//   - Every write is durable before it returns, except a Renew, which is
//     answered once applied; a reopened store gives every lease that was
//     live its full TTL afresh, so a lost renewal never shortens a lease.
//   - Every call is confined to its tenant: a node of another tenant is not
//     found.
//   - A directory is open in one process, one Store, at a time (the
//     store's lock): Open fails while `tether serve` or another Store has
//     it. Close stops the background services and closes the store; the
//     directory can then be opened again, by Open or by `tether serve`.
package lease
