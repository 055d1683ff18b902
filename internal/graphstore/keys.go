package graphstore

import (
	"bytes"
	"cmp"
	"encoding/binary"
)

// Key layout. Every tenant record starts with a one-byte tag and the tenant id,
// so a range over one tenant's keys can never reach another's. Variable-length
// parts are separated by 0x00, which no id, tenant, type or queue may contain;
// numbers are fixed-width big-endian so that byte order is numeric order.
// Only records are stored: every index (by status, queue, parent, the ready
// set, live leases, blocker and dependent counts, incoming live edges) is
// rebuilt in memory at open (see state.go and rebuild.go).
//
//	n|t|id                          node record (may end with pointers to its event groups, node_events.go)
//	F|t|id                          last fence of a deleted node (fences never repeat)
//	E|t|from|type|to                live edge (record, with the seq of its edge_added event);
//	                                a live assigned edge is kept in its node's record instead
//	R|t|from|type|to|seq            retired edge, outgoing side (record; seq: its edge_added event)
//	S|t|to|type|from|seq            retired edge, incoming side (no value)
//	U|t|queue                       queue settings (paused, max_running)
//	v|t|seq                         the events one transaction appended, under the seq of its last one
//	w|t|id|seq                      the node has an event in the group v|t|seq (no value), when
//	                                the group's transaction did not write the node's record, or
//	                                the record holds maxRecordPointers pointers already
//	C|t|id|created|seq              comment on a node (created: the node's creation instant, see comment.go)
//	T|t                             tenant record
//	K|t|keyid                       API key record
//	i|t|key                         idempotency record (expires with a Badger TTL)
//	W|t|by|worker                   worker heartbeat record (expires with a Badger TTL)
//	X|t                             retention mark: highest event seq removed, fence floor (retention.go)
//	M|t|id                          message record (package message; once read, or given a ttl,
//	                                it expires with a Badger TTL); its inbox indexes live in memory
//	B|t|sha                         blob record (size, content type, grace start; the bytes are a file)
//	b|t|...                         reserved for blob references (today they live in the node records)
//	H|t|id                          schedule record (the schedule package's)
//	h|t|id|seq                      run record of a schedule: fire seq (the schedule package's)
//	0x01 "format"                   the store format version (format.go)
//	0x01 "fields"                   the fields marker: fields per tuple record (format.go)
//
// order is 16 bytes: priority descending, then creation time ascending.
const (
	tagNode        = 'n'
	tagFence       = 'F'
	tagEdge        = 'E'
	tagRetiredOut  = 'R'
	tagRetiredIn   = 'S'
	tagQueue       = 'U'
	tagEvent       = 'v'
	tagNodeEvent   = 'w'
	tagComment     = 'C'
	tagTenant      = 'T'
	tagAPIKey      = 'K'
	tagIdempotency = 'i'
	tagWorker      = 'W'
	tagMessage     = 'M'
	tagBlob        = 'B'
	tagBlobRef     = 'b' // reserved, unused: references live in Node.Blobs
	tagSchedule    = 'H'
	tagScheduleRun = 'h'
	keySeparator   = 0x00
	orderKeyLength = 16
)

// keyBuilder appends key parts; parts are separated by keySeparator.
type keyBuilder struct{ b []byte }

func newKey(tag byte, tenant string) *keyBuilder {
	return newKeyIn(make([]byte, 0, 64), tag, tenant)
}

// newKeyIn builds a key in buf (from its start), for a key only handed to
// the store's Set or Delete, which copy it: a transaction reuses one buffer
// (Tx.scratchKey).
func newKeyIn(buf []byte, tag byte, tenant string) *keyBuilder {
	b := append(buf[:0], tag, keySeparator)
	b = append(b, tenant...)
	b = append(b, keySeparator)
	return &keyBuilder{b: b}
}

// str appends a variable-length part and its separator.
func (k *keyBuilder) str(s string) *keyBuilder {
	k.b = append(k.b, s...)
	k.b = append(k.b, keySeparator)
	return k
}

// last appends a final variable-length part with no separator after it.
func (k *keyBuilder) last(s string) []byte {
	return append(k.b, s...)
}

func (k *keyBuilder) u64(v uint64) *keyBuilder {
	k.b = binary.BigEndian.AppendUint64(k.b, v)
	return k
}

func (k *keyBuilder) bytes() []byte { return k.b }

// orderBytes encodes (priority desc, created asc) so that byte order is list order.
func orderBytes(priority int64, createdNanos int64) []byte {
	var b [orderKeyLength]byte
	// Flip the sign bit so negative priorities sort below positive ones, then
	// invert everything so higher priorities come first.
	binary.BigEndian.PutUint64(b[:8], ^(uint64(priority) ^ (1 << 63)))
	binary.BigEndian.PutUint64(b[8:], uint64(createdNanos)^(1<<63))
	return b[:]
}

// compareOrder compares two order keys as bytes, which is comparing their
// big-endian halves as numbers: two loads and compares instead of a call to
// bytes.Compare, in the comparisons of every ready and list tree.
func compareOrder(a, b *[orderKeyLength]byte) int {
	if c := cmp.Compare(binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(b[:8])); c != 0 {
		return c
	}
	return cmp.Compare(binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(b[8:]))
}

// An order key is two big-endian uint64s (orderBytes, compareOrder).
var _ = [1]struct{}{}[orderKeyLength-16]

// createdOf returns the creation instant (unix ns) that orderBytes encoded.
func createdOf(order [orderKeyLength]byte) int64 {
	return int64(binary.BigEndian.Uint64(order[8:]) ^ (1 << 63))
}

func nodeKey(tenant, id string) []byte { return newKey(tagNode, tenant).last(id) }

func fenceKey(tenant, id string) []byte { return newKey(tagFence, tenant).last(id) }

func queueRecordKey(tenant, queue string) []byte { return newKey(tagQueue, tenant).last(queue) }

func liveEdgeKey(tenant, from, typ, to string) []byte {
	return newKey(tagEdge, tenant).str(from).str(typ).last(to)
}

func retiredEdgeKey(tag byte, tenant, a, typ, b string, seq uint64) []byte {
	return newKey(tag, tenant).str(a).str(typ).str(b).u64(seq).bytes()
}

func eventKey(tenant string, seq uint64) []byte { return newKey(tagEvent, tenant).u64(seq).bytes() }

func nodeEventKey(tenant, id string, seq uint64) []byte {
	return newKey(tagNodeEvent, tenant).str(id).u64(seq).bytes()
}

func commentKey(tenant, id string, created int64, seq uint64) []byte {
	return newKey(tagComment, tenant).str(id).u64(uint64(created)).u64(seq).bytes()
}

func tenantKey(tenant string) []byte { return newKey(tagTenant, tenant).bytes() }

func idempotencyKey(tenant, key string) []byte { return newKey(tagIdempotency, tenant).last(key) }

func apiKeyKey(tenant, id string) []byte { return newKey(tagAPIKey, tenant).last(id) }

func messageKey(tenant, id string) []byte { return newKey(tagMessage, tenant).last(id) }

func workerKey(tenant, by, worker string) []byte {
	return newKey(tagWorker, tenant).str(by).last(worker)
}

func blobKey(tenant, sha string) []byte    { return newKey(tagBlob, tenant).last(sha) }
func scheduleKey(tenant, id string) []byte { return newKey(tagSchedule, tenant).last(id) }

func scheduleRunKey(tenant, id string, seq uint64) []byte {
	return newKey(tagScheduleRun, tenant).str(id).u64(seq).bytes()
}

func putU64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func uint64FromBytes(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// splitKey splits the parts of a key after its tag: tenant, then the
// separated parts; the last part runs to the end (it may hold fixed-width
// numbers, which can contain the separator byte, only when n says so).
func splitKey(key []byte, n int) [][]byte {
	if len(key) < 2 {
		return nil
	}
	var parts [][]byte
	rest := key[2:]
	for len(parts) < n-1 {
		i := bytes.IndexByte(rest, keySeparator)
		if i < 0 {
			return nil
		}
		parts = append(parts, rest[:i])
		rest = rest[i+1:]
	}
	return append(parts, rest)
}
