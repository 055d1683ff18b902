// Package message steers running agents: a sender posts a message to an
// identity ("<sub>") or to a node ("node:<id>"), and the recipient reads it
// from its inbox, in priority order, then oldest first, and acknowledges it.
//
// A message to a node is addressed to the work, not to a worker: it reaches
// whoever holds the node's live lease when the inbox is read, so it survives
// a handoff, an expiry or a requeue, and a holder that let the node go no
// longer sees it.
//
// A message's state is derived from its record and the clock, never stored
// as such:
//
//	         inbox lists it            ack
//	pending ───────────────▶ delivered ─────▶ read
//	   │                        │
//	   └──── ttl passes ────────┴────────────▶ expired
//	         (or its node is removed)
//
// (an ack of a pending message makes it delivered and read at once).
//
// Invariants:
//   - Every record lives under its tenant's keys (records.Txn.MessagePut), so
//     no tenant sends to, lists, reads or acknowledges another's messages:
//     an id of another tenant is a fault.NotFound, like one that never was.
//   - A message to a node and a message to an identity are in separate
//     key spaces: the inbox index files one under its node's box, the
//     other under its identity's (index.go, boxKey), and which one is
//     decided by its "to" alone. A node's box is read only through a live
//     lease on the node, so no identity reaches it by its name, whatever
//     it spells; and no identity may be named with a prefix the API gives
//     meaning to ("node:", "identity:", "schedule:"; graphstore.SubjectProblem),
//     so no subject even looks like a node's address.
//   - Who may see a message (Get): its sender, the identity it is addressed
//     to, the identity it was delivered to or read by, the current holder of
//     the node it is addressed to, and a dispatcher (or admin) of the
//     tenant. To anyone else it does not exist (fault.NotFound).
//   - Who may acknowledge it: the identity it is addressed to, or the live
//     holder of its node; acknowledging a read message again changes
//     nothing.
//   - A message whose ttl has passed unread is expired at once, by the
//     store's clock, whether or not the in-memory sweep ran: no inbox lists
//     it, no count includes it, no ack takes it. The sweep (index.go, run
//     on a timer of the store's clock and before every read) only frees
//     memory and counts it once in Stats.Expired.
//   - Every write and its event commit in one transaction: sending a message
//     to a node emits message_sent on the node, reading it message_read.
//     Messages to an identity emit no event (they belong to no node).
//   - The inbox indexes (index.go) are derived from the records: rebuilt at
//     New, changed only once a write is durable (OnDurable, in commit order),
//     so nothing a reader sees, no count and no long-poll wake-up, is ahead
//     of the store. Every listed message is re-read from the store and
//     checked again.
//   - Reading an inbox is O(held + k·(log n + page)), k the caller's
//     identity plus the nodes it holds that have messages: one ordered tree
//     per recipient (and per recipient and thread), a page taken from each
//     and merged. The unread count of a renewal or progress (the caller's
//     identity and that node) is two map lookups; a heartbeat's (the whole
//     inbox) is O(held).
//   - A message to a node that is removed (deleted, or purged by retention)
//     before anyone read it expires in the removal's transaction (gone.go,
//     a graphstore.NodeGoneHook): nobody can hold that node again. Candidates
//     come from the index and from the sends committed but not yet durable
//     (index.sending), and each is read again in the transaction. New
//     expires those a server without this hook left behind.
//   - A read message is kept Retention after it was read, an expired one
//     Retention after its expiry; then it is gone (its record expires by a
//     Badger TTL, its index entries by the sweep). An unread message without
//     ttl is kept until it is read.
//   - The expiry sweep runs on the injected clock between Start and Stop (a
//     startstop service); it is in memory and writes nothing, and each timed
//     sweep tells a test it ran (TestSignals.Swept).
package message
