// Package startstop gives every background service of the server one start
// and stop shape, after River's startstop.BaseStartStop: a service embeds
// BaseStartStop, calls StartInit first thing in its Start, runs its loop in
// a goroutine that watches the stopping context StartInit returns, and calls
// the stopped func when the loop has returned. Stop, Started and Stopped come
// from the embedding.
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
