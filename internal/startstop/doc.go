// Package startstop gives every background service of the server one start
// and stop shape, after River's startstop.BaseStartStop: a service embeds
// BaseStartStop, calls StartInit first thing in its Start, runs its loop in
// a goroutine that watches the stopping context StartInit returns, and calls
// the stopped func when the loop has returned. Stop, Started and Stopped come
// from the embedding.
//
// Its users, each started by server.Open and stopped by Shutdown in reverse
// order, each with a testsignal for "I ran" (see package testsignal):
//
//	leasing.Service      the reaper (leasing/expire.go)             TestSignals.Reaped
//	retention.Cleaner  a pass every Interval (cleaner.go)       TestSignals.Passed
//	blob.Service       the collector's sweeps (blob/collect.go) TestSignals.Swept
//	schedule.Service   the firing loop (schedule/loop.go)       TestSignals.Idle, Fired
//	message.Service    the expiry sweep (message/service.go)    TestSignals.Swept
//
// Not on it, as they live and die with something else: the storage
// engine's writer, logger and applier goroutines (kv.Store's Start and
// Close) and graphstore's list-index catch-up loop (graphstore.Store's Open and
// Close); the cluster node's watch and lease loops (cluster.Node). Package
// queuemetrics and the worker registry (fleet) have no loop: what they
// show is computed when read, and a forgotten worker's record is removed
// by the engine's expiry.
//
// Invariants:
//   - A service runs at most once: Start after Start, or after Stop, does
//     nothing and returns nil; a service that failed to start is stopped.
//   - Stop is idempotent and safe from any goroutine, before, during or after
//     Start: it cancels the stopping context and returns only once the loop
//     has returned (at once when it never started).
//   - The stopping context keeps the values of Start's ctx but not its
//     cancellation: Start's ctx bounds the start (a rebuild from the store),
//     and only Stop ends the service.
//   - Started is closed once the loop runs (or the service stopped without
//     running); Stopped once it has returned. Both may be taken at any time.
package startstop
