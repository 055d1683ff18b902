package records

// FormatVersion is the version of the store's records and key layout.
//
//	1: JSON records with durable indexes (Tether before the binary codec).
//	2: MessagePack records (records.go), indexes in memory, events grouped
//	   per transaction.
//	3: node records end with the blobs they reference; blob records.
//	4: a node record may carry pointers to its event groups after its
//	   fields (graphstore's node_events.go) instead of pointer keys.
//	5: the records other packages own (tenants, API keys, workers,
//	   messages, schedules and their runs) are MessagePack too, in their
//	   owners' generated codecs, instead of JSON (foreign.go).
const FormatVersion = 5

// MigratesFrom is the oldest format this server opens and moves to
// FormatVersion. A format-3 store is a format-4 store without pointers in
// its records (every pointer is a key, which format 4 reads too); both hold
// the other packages' records as JSON, which Open recodes before it writes
// the new version (graphstore's format_json_records.go).
const MigratesFrom = 3

// FormatKey is the key of the store format version, outside every tenant.
var FormatKey = []byte{0x01, 'f', 'o', 'r', 'm', 'a', 't'}
