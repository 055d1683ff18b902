// Package core opens a Tether without its HTTP front: the store and every
// domain service over it (tenants, leases, the nodes service, workers,
// messages, blobs, schedules, retention), wired the one way they are wired.
// internal/server puts the HTTP API on top of a Core; the public packages
// lease, graph and tenant use a Core in-process. Both therefore open a data
// directory with the same code and run the same background obligations on
// it (the reaper, the sweeps, the firing loop, the cleaner).
//
// Invariants:
//   - Open returns a Core whose store is open and whose leases were rebuilt
//     from it (every one the previous owner may have renewed given its full
//     TTL afresh, the others reaped: leasing.Service.Start).
//   - Every background service has startstop's shape: Open starts them (the
//     reaper, the message sweep, the blob sweeps, the schedules' firing
//     loop, the cleaner, in that order) and stacks each Stop above the
//     store's Close (closers.go); Close undoes them last first.
//   - A failed Open undoes what it built, last first: nothing it started
//     keeps running and the store is closed.
//   - The tenant policy is the one source of the limits the leasing and nodes
//     services apply (TTL default and max, leases per identity, max
//     attempts, retry backoff, retention, blob quota): they read it per call.
package core
