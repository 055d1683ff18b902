// Package nodes is the lifecycle above leases: creating, patching and deleting
// nodes, edges with their bookkeeping, readiness, completion, cascade cancel,
// batches of lease and lifecycle ops (Batch), and the read models (node
// views, lists, subgraphs, live leases). Every
// change of a node's status is a transition of package lifecycle
// (lifecycle.Create, Complete, Fail, Cancel, Requeue, MoveQueue); this
// package validates the request, checks the caller's lease, and calls it.
//
// Invariants:
//   - Readiness is kept by graph as each write commits (its blocker counts
//     and ready mirror), never recomputed at read time: a node is ready when
//     it is open or queued, its run_at has passed, every depends_on target is
//     done (or ended, with on_fail: ignore), and every child is terminal.
//     The claimable rule that decides a claim is graph's (Tx.ClaimRefusals,
//     through lifecycle.Claimable); ReadinessTx only explains it in a view.
//   - A node's parent field and its live incoming parent_of edge always agree:
//     both change in the same transaction.
//   - assigned edges are written only by the leasing package; no request may add
//     or retire one directly.
//   - Cancel reaches every non-terminal descendant (parent_of) and dependent
//     (depends_on with on_fail: cancel) and ends their leases in one
//     transaction.
//   - Claim-next decides on the store's writer from the in-memory ready mirror:
//     O(log n) to the head of the queue, and two claims can never pick the
//     same node. A paused queue, or one at its max_running, hands out nothing.
//     A long poll subscribes before it looks, so nothing that turns ready
//     between the look and the wait is missed; once it waits it tells a test
//     so (TestSignals.Parked).
//   - A completion that asks for the next claim (CompleteAndClaimNext) claims
//     in its own transaction only when it changed no node but its own (so it
//     made nothing ready); when that claim finds nothing, or there is no room,
//     the claim runs in a transaction of its own once the completion is
//     applied, and sees what the completion made ready and gave back. A claim
//     without room never undoes the completion.
//   - A child that ends failed, dead or cancelled fails its parent when the
//     parent's on_child_fail is fail (its remaining children are cancelled),
//     in the same transaction, repeating up the tree (lifecycle.ChildEnded,
//     which every transition into those statuses runs, expiry included).
//   - A create made under an Idempotency-Key records its outcome in the same
//     transaction as the nodes, so a retry sees both or neither; it is
//     looked up before a unique key, and remembers which answers were
//     duplicates.
//   - A create with a unique key writes the key's record (naming the node,
//     its window and while statuses, or its debounce) in the transaction
//     that makes the node, on the store's single writer, so creates with
//     one key, however concurrent, make one node while it holds the key;
//     the others answer it (unique.go). A record is trusted only while its
//     node carries the key.
//   - A node past its start_by is never claimed (the claimable rule); the
//     LapseReaper ends it expired from the store's start_by heap, never a
//     walk, and at Start ends those that lapsed while no server ran before
//     the server serves (lapse.go).
//   - A claim-next (or claims) made under an Idempotency-Key records the
//     nodes it claimed and their fences in the transaction of those claims,
//     under a key apart from the creates' keys; a repeat claims nothing and
//     answers the recorded claims still held under their fence, so one key
//     never claims twice. A claim that found nothing records nothing.
//   - usage_total of a node is its own usage plus its children's usage_total,
//     maintained by adding each run's usage along the parent chain.
//   - Many ops share a transaction only where each still gets its own
//     answer: a chunk of claims serves one request (what it claimed, or on an
//     error nothing of it), and a chunk of CompleteMany's completions in which
//     any op fails is rolled back whole and run again one op per transaction.
//   - Batch answers each op on its own, in the order given, with what its
//     call alone would answer: an op's error (a fault error, or an internal
//     one) is in its result and fails no other op, and an op that panics is
//     that op's internal error. Ops on one node run in the order given; at
//     most BatchParallelism ops run at once. Every op acts as the batch's
//     caller. Batch returns once every write it answers is durable (one
//     barrier wait for the whole batch), so no result is reported before
//     its write could be read.
//   - A bulk action confirmed with ids (the selected of its dry run) touches
//     only those of them its filter still selects, so a confirmation bounds
//     what it acts on; a bulk never selects identity nodes, and a reason
//     (bulk, requeue, cancel) is at most MaxReasonLength bytes, since it is
//     kept in the event of every node it reaches.
//   - One page of a list reads at most its ScanBudget records
//     (ListScanBudget through the API): a filter that matches little
//     answers a short page and a cursor rather than walking the tenant.
//   - A page of queues holds at most QueuesLimitMax queues, by name.
package nodes
