// Package blob stores blobs: files a tenant uploads (POST /v1/blobs), named
// by their sha256 and read back by it, which nodes may reference
// (Node.Blobs) so that workers can hand each other inputs and results too
// large for a node's props or result.
//
// The bytes of a blob are one file under the blob directory
// (DATA_DIR/blobs/<tenant>/<sha[:2]>/<sha>, files.go); its record (size,
// content type, when its grace period started) is a graph record
// (internal/graphstore/blob_records.go), and so is every reference: a node's Blobs list.
//
// Life of a blob:
//
//	upload ──▶ unreferenced ──(a node names it)──▶ referenced
//	               ▲    │                              │
//	               │    │ grace period passes          │ the last node naming it
//	               │    ▼                              │ drops it (PATCH) or is deleted
//	               │  collected (record, then file)    │
//	               └───────────────────────────────────┘
//
// Invariants:
//   - An upload is streamed, never held whole in memory: it is copied to a
//     temporary file in DATA_DIR/blobs/.tmp while it is hashed, cut off one
//     byte past MaxBytes (413, nothing kept), fsynced, then renamed to its
//     final name and the directory fsynced, and only then is its record
//     written; so a durable record always names a durable file.
//   - Blobs are content-addressed per tenant: one tenant's upload of bytes
//     another tenant has stores a second copy, and no request can read,
//     learn of or collect another tenant's blob (its path and its record key
//     both carry the tenant).
//   - A repeated upload of bytes the tenant has is answered with the blob as
//     it is (its first content type kept) and, if no node names it, starts
//     its grace period again; the temporary file is dropped.
//   - A tenant's blobs together stay within its quota (policy
//     blob_quota_bytes; 0 is no cap), checked in the write that adds the
//     record; an upload that would cross it is 413 and keeps nothing.
//   - A blob some node names (whatever the node's status) is never collected: the counts are kept by
//     the graph in the same transaction as the node write, and collection
//     re-checks them in its own transaction. A blob no node has named for
//     Grace (on the injected clock) is collected within one sweep interval
//     after (collect.go): its record is deleted, then its file. The timed
//     sweeps are a startstop service: they run between Start and Stop,
//     Stop waits for one under way, and each tells a test it ran
//     (TestSignals.Swept).
//   - Per (tenant, sha256), the making of a file with its record and the
//     removal of a record with its file are serialised (Service.stripes), so
//     a collection never removes the file of a blob uploaded again meanwhile.
//   - Open tidies what a crash left: temporary files, and blob files with no
//     record (an upload that crashed before its record was durable, a
//     collection that crashed before it removed its file).
//
// Backup: the blob directory is not in the store; a backup (package backup)
// carries, after the records of its snapshot, the file of every blob a
// record names. Files are immutable once renamed, and Hold keeps collected
// files in place while a backup reads them.
package blob
