// Package tenant manages tenants on an open store, in-process: each
// tenant's policy (the TTLs, attempts and caps the lease service applies)
// and its API keys (the credentials `tether serve` on the same data
// directory accepts over HTTP).
//
// A program gets its Tenants from lease.Store.Tenants; it does not open one
// itself. Every tenant exists implicitly: its policy is the defaults until
// a patch changes a field.
//
// Invariants:
//   - A tenant's effective policy is the defaults overlaid by its stored
//     overrides. SetPolicy validates the result as a whole (TTL default at
//     most the max, the max at most the ceiling, ...) and is durable before
//     it returns; every claim, renewal and create that starts afterwards
//     applies it.
//   - One tenant's policy and keys never affect another's.
//   - An API key's secret is returned once, by CreateKey; only its SHA-256
//     is stored. A deleted key fails verification at once.
//   - Errors that mean an argument breaks a rule match graph.ErrInvalid,
//     and a credential refused matches ErrUnauthorized.
package tenant
