// Package intake is "enqueue in your own transaction" for Tether on
// PostgreSQL. An application inserts a node into the intake table inside
// its own transaction (SELECT <schema>.enqueue(tenant, node), or a plain
// INSERT; migration 0002_intake in internal/pgschema); a Consumer picks the
// row up once it has committed and makes the node through a Creator, then
// deletes the row.
//
//	application tx: INSERT intake row ──commit──▶ NOTIFY <schema>_intake
//	Consumer: wake (notification, or every PollInterval)
//	  BEGIN; SELECT … FOR UPDATE SKIP LOCKED LIMIT n
//	  each row: Creator.Create(tenant, node, "intake-<id>")
//	    made          ─▶ DELETE row
//	    *Rejected     ─▶ DELETE row, INSERT intake_failed (status, error)
//	    other error   ─▶ leave the row; back off
//	  COMMIT
//
// Invariants:
//   - A row makes at most one node, ever. Its node is made under the
//     Idempotency-Key intake-<row id> (ids are never reused), and the row is
//     deleted in the transaction that locked it; when that transaction does
//     not commit (a crash, a lost connection, Stop), the row is taken again
//     and the key answers the node made first. This holds while the server
//     keeps the key (nodes.IdempotencyWindow, 24 hours): a row that could
//     not be deleted for that long could make a second node.
//   - A row makes no node before it has committed, and a rolled-back row
//     makes none: the consumer reads only committed rows, and NOTIFY is
//     delivered on commit only.
//   - A row's node is made in the row's tenant and no other: the request
//     carries a token naming that tenant (Signer), and the API confines it
//     there as it does any client's.
//   - Every node goes through the API's create (HandlerCreator): the same
//     validation, limits, idempotency and, behind the cluster's front, the
//     same routing to the shard's owner as a client's POST /v1/nodes.
//   - A refused row (400, 404, 409, 413, 422) never blocks the rows behind
//     it: it moves to intake_failed, with the refusal, in the transaction
//     that deletes it. A passing failure (503, 429, the server stopping)
//     leaves the row where it is and backs the loop off.
//   - Every size is bounded: a row's node by the table (1 MiB) and by the
//     API's body limit, a batch by BatchSize, creates at once by
//     Concurrency, a kept error by 2000 bytes, tokens kept by 4096 tenants.
//   - Notifications only wake the loop; polling alone is enough (where
//     LISTEN is missing, as on CockroachDB, or its connection is down), so
//     a lost notification only delays a row by PollInterval.
//   - The consumer has startstop's shape: Stop ends the loop and the
//     listener; a batch whose creates ran still commits (within 10 s).
//
// Order: rows are taken oldest first, but a batch's nodes are made
// Concurrency at a time, so nodes of one batch may be created in another
// order than their rows.
//
// Trust: whoever may insert into the intake table (or execute enqueue) may
// create nodes in any tenant, as a dispatcher. Grant it as such.
package intake
