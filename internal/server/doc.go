// Package server assembles a Tether server: the store and its domain
// services (tenants, leases, the nodes service, workers, schedules, messages,
// blobs, retention), which package core wires and the in-process public
// packages share, then the HTTP API and, when `tether serve` wires it, the
// MCP handler at /mcp. It is used by `tether serve` and by tests that start
// a real server on a free port.
//
// Invariants:
//   - Open returns a server whose store is open and whose leases were rebuilt
//     from it (every one the previous server may have renewed given its
//     full TTL afresh, the others reaped: leasing.Service.Start).
//   - Open starts the schedules' firing loop once the nodes service is ready;
//     fires missed while the server was down are made then, within each
//     schedule's catch-up window.
//   - Every background service (the reaper, the message sweep, the blob
//     sweeps, the firing loop, the cleaner) has one shape, startstop's:
//     core.Open starts them in that order and stacks each Stop, with the
//     store's Close beneath them (core's closers.go).
//   - A failed Open undoes what it built, last first: nothing it started
//     keeps running and the store is closed.
//   - Shutdown drains in-flight requests before the background services stop
//     (in the reverse order Open started them) and the store closes, so no
//     acknowledged write is lost, none is half made, and no goroutine of
//     theirs outlives the server.
package server
