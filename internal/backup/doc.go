// Package backup writes and restores Tether's backup stream: every record of
// a store as of one instant, in a format that checks itself.
//
// A backup is taken online, from one consistent snapshot of the running
// store (kv.Store.Snapshot): the state after some durable commit, all of it
// and nothing later, while writes go on. It holds the records and the file
// of every blob a record in the snapshot names (blob files are immutable,
// and held in place while the backup runs, so reading them after the
// snapshot reads what it named); the
// in-memory state (indexes, the ready set, lease deadlines) is rebuilt when
// a server opens the restored directory, as at any start.
//
// Format, version 1:
//
//	header   "TETHERBK" (8 bytes), version (1 byte)
//	record   kind 1 (1 byte), uvarint len(key), key, uvarint len(value),
//	         value, uvarint expiry (unix seconds, 0 for none)
//	blob     kind 2 (1 byte), uvarint len(tenant), tenant, uvarint len(sha),
//	         sha (hex), uvarint size, the file's bytes; after every record
//	trailer  kind 0xFF (1 byte), uvarint record count, SHA-256 (32 bytes) of
//	         every byte before the trailer's kind byte
//
// Invariants:
//   - A restore writes into a new directory beside the target and renames it
//     into place only once the trailer's count and checksum match: a torn,
//     truncated or corrupted stream leaves nothing behind.
//   - A restore never writes into a directory that holds anything.
//   - A restored blob file hashes to its name, or the restore fails.
//   - The stream carries the store's format version record like any other,
//     so the restored directory opens (or is refused) exactly as the
//     original would be.
package backup
