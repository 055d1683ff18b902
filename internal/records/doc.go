// Package records is what Tether stores, and how: the key layout (keys.go),
// the records the model keeps (nodes, edges, events, comments, queue settings,
// idempotency, unique-key and blob records: records.go), their generated MessagePack codec
// (records_gen.go; make generate-codecs), an event's data (event_data.go) and
// its timestamps (stamp.go), the statuses and event types (node.go,
// event_types.go) and the store format version and fields marker (format.go).
// The records other packages own (tenants, API keys, workers, messages,
// schedules and their runs) keep their shapes and codecs in their owners'
// packages and their keys here (foreign.go), read and written through
// records.Txn (owned.go). It imports no Tether package but kv: package
// graphstore reads and writes the model's records in its transactions, and
// hands out a records.Txn for the others.
//
// Invariants:
//   - Every record of a tenant lives under a key that carries the tenant id
//     right after the record tag (NewKey), so no range over one tenant's
//     keys can reach another's (FuzzKeysStayInsideTenant). Variable-length
//     parts never contain KeySeparator; numbers are fixed-width big-endian,
//     so byte order is numeric order.
//   - An order key (OrderBytes) sorts as list order: priority descending,
//     then creation ascending; CompareOrder agrees with bytes.Compare on it
//     (FuzzOrderBytes, FuzzCompareOrder).
//   - The model's records are MessagePack tuples of variable length, in
//     field order: a field is only ever appended, and a record written
//     before it reads with it zero, so that needs no new format (the fields
//     marker keeps an older release from opening a store with fields it
//     does not know); any other change bumps FormatVersion. The other
//     packages' records are maps keyed by their JSON names, so their owners
//     may add fields freely.
//   - Only records are stored: every index over them is derived in memory
//     (package graphstore) and rebuilt at open.
package records
