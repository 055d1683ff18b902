package graphstore

import (
	"bytes"
	"encoding/binary"
)

// A node's pointers to the event groups that hold its events live in two
// places (from format 4):
//
//   - at the end of its record, after the MessagePack tuple, for the groups of
//     transactions that wrote the record anyway (a create, a claim, a
//     completion): up to maxRecordPointers of them, so a claim and a
//     completion write no pointer key of their own;
//   - as w|t|id|seq keys (no value), for the rest: a group of a transaction
//     that did not write the record (a comment, an edge), a node whose record
//     holds maxRecordPointers already, and the pointers of a deleted node.
//
// The pointers at the end of a record are
//
//	seq_1 .. seq_k  (8 bytes each, big-endian, ascending)  k (1 byte)  0xFF
//
// A record without them ends with its tuple, whose last field never ends in
// 0xFF: Traceparent, a string (hex and dashes, or empty: 0xA0), and in a
// format-5 record Blobs, an array of sha256 hex strings; a field appended
// later must keep that true (records.go). The pointers belong to the
// store, not to the Node: putNode carries them from the record it replaces,
// so no caller can drop them, and NodeGet's decoding ignores them.

// maxRecordPointers bounds the pointers a record carries (a node with more
// groups gets keys for the rest), so a long-lived node's record stays small;
// pointers to groups retention removed are dropped when a full record gains
// another.
const maxRecordPointers = 32

const recordPointersMark = 0xFF

// recordPointers returns the pointers at the end of record and the length of
// the tuple before them.
func recordPointers(record []byte) (tuple int, seqs []byte) {
	n := len(record)
	if n < 2 || record[n-1] != recordPointersMark {
		return n, nil
	}
	k := int(record[n-2])
	if k < 1 || k > maxRecordPointers || n < 2+8*k {
		return n, nil
	}
	return n - 2 - 8*k, record[n-2-8*k : n-2]
}

// eachRecordPointer calls fn with each pointer of record, in order.
func eachRecordPointer(record []byte, fn func(seq uint64)) {
	_, seqs := recordPointers(record)
	for i := 0; i < len(seqs); i += 8 {
		fn(binary.BigEndian.Uint64(seqs[i:]))
	}
}

// withPointersOf returns a copy of tuple (a freshly encoded record), exactly
// sized, followed by the pointers of the record it replaces (nil for a new
// node).
func withPointersOf(tuple, replaced []byte) []byte {
	_, seqs := recordPointers(replaced)
	if len(seqs) == 0 {
		return bytes.Clone(tuple)
	}
	out := make([]byte, 0, len(tuple)+len(seqs)+2)
	out = append(append(out, tuple...), seqs...)
	return append(out, byte(len(seqs)/8), recordPointersMark)
}

// withRecordPointer returns a copy of record with seq added to its pointers,
// less those at or behind horizon (groups retention removed), and whether
// there was room. seq is past every pointer record holds.
func withRecordPointer(record []byte, seq, horizon uint64) ([]byte, bool) {
	tuple, seqs := recordPointers(record)
	for len(seqs) > 0 && binary.BigEndian.Uint64(seqs) <= horizon {
		seqs = seqs[8:]
	}
	if len(seqs)/8 >= maxRecordPointers {
		return nil, false
	}
	out := make([]byte, 0, tuple+len(seqs)+10)
	out = append(out, record[:tuple]...)
	out = append(out, seqs...)
	out = binary.BigEndian.AppendUint64(out, seq)
	return append(out, byte(len(seqs)/8+1), recordPointersMark), true
}
