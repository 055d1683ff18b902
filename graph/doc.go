// Package graph is Tether's node graph as a Go program sees it in-process:
// the types of nodes, their edges and leases, and queries over an open
// store — a node, its edges and children, a page of nodes, and who carried
// what (the assigned edges, live and retired, per node and per worker).
//
// A program does not open a Graph itself: it opens a store with lease.Open,
// which starts the services every write goes through, and asks it for its
// Graph. This package imports only the model and its storage, never the
// lease, lifecycle or tenant services, so that queries can be given to code
// that must not write (a dashboard, a report) and the write path has one
// entry point. Writes (create, claim, renew, complete, fail, release) are
// package lease's.
//
// Who carried a node is answered from its assigned edges: every claim
// writes one from the node to its holder's identity node
// (identity:<worker>), with the claim's fence; when the run ends the edge is
// retired, never erased, with the outcome (done, failed, released, expired,
// cancelled). So the history of who carried a node survives the node's
// completion, its retries and its deletion.
//
// Invariants:
//   - Every query reads one snapshot of the store: what it returns was true
//     together at one instant, and holds every write acknowledged before the
//     query began.
//   - Every query is confined to one tenant: no id, list or edge of another
//     tenant is ever returned, whatever the arguments.
//   - A node has at most one live assignment, the holder of its live lease,
//     whose fence is Node.Lease.Fence. Fences of one node strictly increase
//     across its assignments, live and retired.
//   - An Assignment whose Outcome is empty is live; a retired one has an
//     Outcome and an EndedAt, and never changes again.
//   - Errors that mean "no such node" match ErrNotFound (errors.Is).
package graph
