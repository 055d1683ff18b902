// Package mcp serves Tether to agents over the Model Context Protocol, with
// the official Go SDK (github.com/modelcontextprotocol/go-sdk): tools to
// claim and work nodes (claim_next, renew, progress, complete, fail,
// release, comment, create_child, inbox, send_message), to plan and watch
// work (create_node, list_nodes, list_queues, list_limits, wait_for,
// get_node, history),
// and resources to read the guide, a node and a queue's stats. Two transports share it: stdio (`tether mcp`, Serve) and
// streamable HTTP (the server's /mcp, Handler).
//
// # One implementation, two transports
//
// Every tool and resource calls the Tether HTTP API through the generated Go
// client (package client), the same client the CLI and the runner use:
//
//   - `tether mcp` gives Serve a client for TETHER_URL with TETHER_TOKEN;
//   - /mcp gives each session a client whose transport serves the request
//     with the API's own http.Handler in process (inProcess), carrying the
//     caller's bearer token. `tether serve` builds Handler through
//     server.Config.MCP; api.Server.RouteMCP puts it behind the API's
//     authentication and turns the SDK's plain-text refusals into problems.
//
// So a tool call on /mcp passes the same authentication, role check, rate
// limit, validation and problem documents as any API request, and a tool
// behaves the same on both transports. Rather than an interface over the
// domain services, which would duplicate the handlers' decoding and error
// mapping, the package depends only on the API's contract. The cost is an
// encode and decode per call, small beside a round trip to a model.
//
// # Inputs, answers and errors
//
// A tool's input schema is derived (by the SDK, from Go types) from the
// generated client's request types, the types the API's openapi.yaml
// defines, plus the path parameter (node_id, queue): claim_next takes a
// ClaimNextRequest and a queue, complete a CompleteRequest and a node_id,
// list_nodes the query of GET /v1/nodes, and so on. Every member, nested
// ones too, carries the spec's description (describe.go), and a test fails
// on any member without one: openapi.yaml is where a parameter is
// explained, once, for the API's readers and for models alike.
//
// Every tool declares its annotations (hints.go: read-only, destructive,
// idempotent; never open-world, since a tool touches only this server's
// graph) and an output schema (output.go). A tool answers compact
// structured content (answers.go), validated by the SDK against that
// schema, with the same JSON as text: what the agent needs for its next
// step (ids, title, body, the lease's fence and expiry, whether the session
// keeps it) and a next hint naming the tool to call next, never the API's
// whole document.
//
// A claim_next that hands out nothing is an answer, not an error: claimed
// false, and, when flow control held the queue's ready nodes back (the
// API's 204 with Tether-Throttled), throttled names the key, the reason and
// retry_after_ms, so an agent knows when to call again; list_limits reads
// the limits and budgets behind it.
//
// An API error is a tool error (IsError), never a protocol error: its
// structured content is the problem document (type, code, status, detail
// and the members of that code, such as holder or field) plus a hint saying
// what to do, and its text says the same for a reader. Input that does not
// match the schema, or a path argument refused here, is a bad_request
// problem of the same shape, with the API's type for its code. The output
// schema admits both an answer and a tool error, since MCP asks that every
// structured result match it.
//
// # Waiting
//
// wait_for blocks until a node, or all its children, have ended. It long
// polls the tenant's event feed from a cursor read before the statuses (the
// node's latest event: a child's parent_of edge is an event of its parent),
// so that no change after the read is missed, and reads the statuses again
// when an event touches a node it waits for. Each poll holds one of the
// identity's waits, as any long poll does. It ends at max_wait_ms (at most
// ten minutes) or as soon as the call is cancelled or the session ends.
//
// # Keeping leases
//
// A session keeps every lease it obtains (from claim_next, from a complete
// that claimed the next node, or from a renew of a lease it did not know)
// with client.Keep, the runner's keeper: it
// renews at a third of the lease's TTL with the lease's fence and session,
// retries transient failures until the expiry, and forgets the lease when
// the server says it is lost. An agent may think for as long as it likes
// between tool calls without losing its claim. Invariants:
//
//   - complete, fail and release stop the node's keeper before their call,
//     so that no renewal races the end of the lease; unless the call
//     succeeded, the keeper starts again with the latest lease (a refused
//     call need not have ended it; when it had, the keeper's next renewal
//     is refused and the lease forgotten);
//   - renew, progress, complete, fail and release without a fence are given
//     the fence (and session) of the lease the session keeps on the node;
//   - when the session ends (stdin closes, the HTTP session is deleted or
//     idle for HTTPOptions.SessionTimeout, or the server shuts down), every
//     keeper stops. The leases are not released: each lapses at its expiry
//     and the reaper requeues its node, as for a runner that died.
//
// An HTTP session is bound to the identity (tenant and subject) that opened
// it: another caller's request for it gets the answer an unknown session id
// gets (404), so it learns nothing of the session. Its calls, and its
// keepers' renewals, carry the Authorization header of the session's latest
// request, so a client may refresh an expiring JWT within a session.
//
// # Guards of the HTTP transport
//
// Handler checks every request before the SDK sees it:
//
//   - Origin (origin.go): none, the server's own (scheme and exact Host) or
//     a configured one passes; any other is 403 naming it. The SDK refuses a
//     Host that is not loopback on a loopback address (DNS rebinding).
//   - Sessions (registry.go) are capped in all and per identity, and each
//     holds one of its identity's waits (api.HoldWait, the cap long polls
//     and event streams share) while it lives; its standalone stream holds
//     another while open. A place is reserved before the SDK makes the
//     session, so concurrent requests cannot pass a cap, and given back
//     exactly once. Past a cap: 429.
//   - A tool argument that becomes a path segment (node_id, queue) may not
//     be empty, "." or "..": a URL parser would resolve those away and call
//     another route (path_args.go). The generated client escapes every path
//     parameter as well.
//
// Every refusal, the Handler's and the SDK's, is plain text with a status;
// api.Server.RouteMCP maps each status to a problem document.
package mcp
