// Package fleet is the worker registry: what each worker process of a fleet
// last said about itself (idle, working on a node, offline) and when, so that
// an operator can see who is alive without asking every machine.
//
// A worker is named by the pair (by, worker): by is the authenticated
// identity that sent the heartbeat, never a request argument, and worker is a
// name the process chooses (a runner slot, say "host-1"). One identity may run
// many workers; two identities may use the same worker names.
//
// A worker's status moves by its heartbeats only; the registry never changes
// it on its own, and staleness is computed when read, not stored:
//
//	           heartbeat idle/working
//	(none) ─────────────────────────────▶ idle ◀────────▶ working
//	                                        │               │
//	                     heartbeat offline  └──▶ offline ◀──┘
//
// Offline is not an end: a later heartbeat brings the worker back. A
// heartbeat that finds no record, an offline one or a stale one starts a new
// life of the worker (started_at = now); any other keeps started_at.
//
// What every face shows (the API's state, the dashboard, the CLI) is one
// word, the State, derived at read time from the status and the silence:
//
//	status offline                          → offline (said goodbye; never stale)
//	silent for the stale window, otherwise  → stale   (went away without a word)
//	otherwise                               → idle or working, as it said
//
// Invariants:
//   - Every record lives under its tenant's keys (records.Txn.WorkerPut), so
//     a tenant lists only its own workers.
//   - started_at is the instant of the heartbeat that began the worker's
//     current life: its first one, or the first after it said offline or
//     went stale. last_seen_at is the instant of its last heartbeat. Both come
//     from the store's clock inside the write, never from the caller.
//   - stale is now - last_seen_at >= the registry's stale window
//     (TETHER_WORKER_STALE_MS) for a worker that did not say offline,
//     decided with the store's clock at read time; an offline worker is
//     never stale.
//   - Only a working worker names a node; meta is a JSON object of at most
//     MaxMetaBytes, kept until a heartbeat replaces or clears it.
//   - Heartbeats emit no event: each is superseded by the next within
//     seconds, like a lease renewal.
//   - A worker is forgotten (left out of every list, and its record removed
//     by the engine's expiry on the wall clock) OfflineRetention after it
//     said offline (TETHER_WORKER_OFFLINE_RETENTION_MS, default 10 minutes),
//     or Retention (24 hours) after its last heartbeat otherwise: a runner
//     names its slots after its pid, so without this every runner process
//     that stopped left rows behind for a day.
//   - One identity holds at most MaxPerIdentity workers not yet forgotten,
//     and one tenant MaxPerTenant (TETHER_WORKER_MAX_PER_IDENTITY,
//     TETHER_WORKER_MAX_PER_TENANT): the first heartbeat of one more is
//     refused (fault.RateLimited) and stores nothing; heartbeats of workers
//     already held always pass, and nothing is evicted, so no identity can
//     push out another's workers. The count is made in a snapshot off the
//     writer, and made again inside the write when it is within capSlack of
//     a cap, so first heartbeats that race cannot pass a cap together.
package fleet
