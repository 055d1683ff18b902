// Package cli is the tether command line: the client commands (nodes,
// edges, claim, queues, limits, leases, events, messages, blobs, schedules, tokens,
// tenants, backup, mcp, ...), which call a server through the generated Go
// client and share --server, --token and -o; tether work, which runs the
// worker runner of package runner with its Exec handler; and the local
// operator commands health, check, restore and migrate. cmd/tether adds tether serve
// (internal/serve) beside them.
//
// Invariants:
//   - A mistake in the command line exits 2, any other error 1; with -o json
//     an error is a problem document on stderr (the server's own for a
//     refused call).
//   - A command that does not call a server the root's way refuses the
//     root's client flags rather than ignoring them (notAClient).
//   - A token variable that is set but empty is a usage error, not "no
//     token" (envToken).
//   - A client command calls the server through ask or call (call.go), so
//     every call fails the same way: a server that does not answer names
//     the URL it tried, and a refusal is the server's problem document.
//   - Nothing here reads or writes a store: every client command goes through
//     the HTTP API; check and restore work on a stopped server's data
//     directory through internal/graphstore and internal/backup; migrate
//     changes PostgreSQL's schema, never its records, through
//     internal/pgschema.
package cli
