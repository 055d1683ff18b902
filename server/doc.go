// Package server assembles a Tether server from its domain packages: the
// store, tenants, leases, the work engine, workers, schedules, messages,
// blobs, retention (the cleaner), the HTTP API and, when `tether serve` wires
// it, the MCP handler at /mcp. It is the one
// place that knows how they are wired, used by `tether serve` and by tests
// that start a real server on a free port.
//
// Invariants:
//   - Open returns a server whose store is open and whose leases were rebuilt
//     from it (every one the previous server may have renewed given its
//     full TTL afresh, the others reaped: lease.Service.Start).
//   - Open starts the schedules' firing loop once the work engine is ready;
//     fires missed while the server was down are made then, within each
//     schedule's catch-up window.
//   - Shutdown drains in-flight requests before the firing loop and the
//     reaper stop and the store closes, so no acknowledged write is lost,
//     none is half made, and no goroutine of theirs outlives the server.
package server
