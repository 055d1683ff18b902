// Package server assembles a Tether server from its domain packages: the
// store, tenants, leases, the work engine and the HTTP API. It is the one
// place that knows how they are wired, used by `tether serve` and by tests
// that start a real server on a free port.
//
// Invariants:
//   - Open returns a server whose store is open and whose leases were rebuilt
//     from it (live ones given their full TTL afresh, lapsed ones reaped).
//   - Shutdown drains in-flight requests before the reaper stops and the store
//     closes, so no acknowledged write is lost and none is half made.
package server
