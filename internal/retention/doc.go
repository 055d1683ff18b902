// Package retention is the cleaner: it removes what each tenant's policy no
// longer keeps (retention_ms), in small transactions, in the background.
//
// What goes (graphstore.Tx.PurgeFinished, graphstore.Tx.PurgeEvents): a finished node
// retention_ms after it last changed, with its comments, its retired edges
// and its event pointers; and an event retention_ms after it happened. A
// finished node still linked by a live edge to a node that is not finished
// stays, and is looked at again a retention period later. Removal writes no
// event. A tenant's retention_ms of 0 keeps everything.
//
// Invariants:
//   - One pass removes at most Batch nodes, then at most Batch event groups,
//     per transaction: the writer serves other requests between them, so a
//     backlog of removals never stalls claims (River's JobCleaner is the
//     model).
//   - Events go oldest first and the tenant's horizon (the highest seq
//     removed) is stored with them: a reader whose cursor is behind it gets
//     410 Gone (api), never a silent gap, and no seq is ever handed out
//     again, even when every event was removed.
//   - A removed node's fences raise the tenant's fence floor, so a node
//     created later under the same id never repeats a fence.
//   - The cleaner runs on the injected clock: tests move time instead of
//     sleeping. It is a startstop service (Start, Stop), and each timed pass
//     tells a test it ran (TestSignals.Passed).
package retention
