package records

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
// rebuilt in memory at open (see graphstore's state.go and rebuild.go).
//
//	n|t|id                          node record (may end with pointers to its event groups, graphstore's node_events.go)
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
//	C|t|id|created|seq              comment on a node (created: the node's creation instant, see graphstore's comment.go)
//	T|t                             tenant record
//	K|t|keyid                       API key record
//	i|t|key                         idempotency record of a create (expires with a Badger TTL)
//	i|t|claim|key                   idempotency record of a claim (as above; no create key holds 0x00)
//	W|t|by|worker                   worker heartbeat record (expires with a Badger TTL)
//	X|t                             retention mark: highest event seq removed, fence floor (graphstore's retention.go)
//	M|t|id                          message record (package message; once read, or given a ttl,
//	                                it expires with a Badger TTL); its inbox indexes live in memory
//	B|t|sha                         blob record (size, content type, grace start; the bytes are a file)
//	b|t|...                         reserved for blob references (today they live in the node records)
//	H|t|id                          schedule record (the schedule package's)
//	h|t|id|seq                      run record of a schedule: fire seq (the schedule package's)
//	L|t|key                         limit on a concurrency key or prefix (max running, start rate)
//	G|t|key                         usage budget on a concurrency key, with its current window's spend
//	L|t|key                         limit on a concurrency key or prefix (max running, start rate)
//	G|t|key                         usage budget on a concurrency key, with its current window's spend
//	0x01 "format"                   the store format version (format.go)
//	0x01 "fields"                   the fields marker: fields per tuple record (format.go)
//
// order is 16 bytes: priority descending, then creation time ascending.
const (
	TagNode        = 'n'
	TagFence       = 'F'
	TagEdge        = 'E'
	TagRetiredOut  = 'R'
	TagRetiredIn   = 'S'
	TagQueue       = 'U'
	TagEvent       = 'v'
	TagNodeEvent   = 'w'
	TagComment     = 'C'
	TagTenant      = 'T'
	TagAPIKey      = 'K'
	TagIdempotency = 'i'
	TagWorker      = 'W'
	TagMessage     = 'M'
	TagBlob        = 'B'
	TagBlobRef     = 'b' // reserved, unused: references live in Node.Blobs
	TagSchedule    = 'H'
	TagScheduleRun = 'h'
	TagRetention   = 'X'
	TagLimit       = 'L'
	TagBudget      = 'G'
	KeySeparator   = 0x00
	OrderKeyLength = 16
)

// KeyBuilder appends key parts; parts are separated by KeySeparator.
type KeyBuilder struct{ b []byte }

// NewKey starts a key of tenant under tag.
func NewKey(tag byte, tenant string) *KeyBuilder {
	b := append(make([]byte, 0, 64), tag, KeySeparator)
	b = append(b, tenant...)
	return &KeyBuilder{b: append(b, KeySeparator)}
}

// Reset starts a new key in k's buffer, keeping its room, for a key only
// handed to the store's Set or Delete, which copy it: the writer reuses one
// builder for such keys (graphstore's Tx.scratchKey). The key is valid until
// the next Reset.
func (k *KeyBuilder) Reset(tag byte, tenant string) *KeyBuilder {
	b := append(k.b[:0], tag, KeySeparator)
	b = append(b, tenant...)
	k.b = append(b, KeySeparator)
	return k
}

// Str appends a variable-length part and its separator.
func (k *KeyBuilder) Str(s string) *KeyBuilder {
	k.b = append(k.b, s...)
	k.b = append(k.b, KeySeparator)
	return k
}

// Last appends a final variable-length part with no separator after it and
// returns the key. It leaves k as it was (so a key that stays on the
// caller's stack does not move to the heap): a reused builder takes back
// what Last grew with Keep.
func (k *KeyBuilder) Last(s string) []byte {
	return append(k.b, s...)
}

// Keep makes key, which Last built from k, k's buffer, so the next Reset
// reuses its room.
func (k *KeyBuilder) Keep(key []byte) { k.b = key }

// U64 appends a fixed-width big-endian number.
func (k *KeyBuilder) U64(v uint64) *KeyBuilder {
	k.b = binary.BigEndian.AppendUint64(k.b, v)
	return k
}

// Bytes is the key built so far.
func (k *KeyBuilder) Bytes() []byte { return k.b }

// OrderBytes encodes (priority desc, created asc) so that byte order is list order.
func OrderBytes(priority int64, createdNanos int64) []byte {
	var b [OrderKeyLength]byte
	// Flip the sign bit so negative priorities sort below positive ones, then
	// invert everything so higher priorities come first.
	binary.BigEndian.PutUint64(b[:8], ^(uint64(priority) ^ (1 << 63)))
	binary.BigEndian.PutUint64(b[8:], uint64(createdNanos)^(1<<63))
	return b[:]
}

// CompareOrder compares two order keys as bytes, which is comparing their
// big-endian halves as numbers: two loads and compares instead of a call to
// bytes.Compare, in the comparisons of every ready and list tree.
func CompareOrder(a, b *[OrderKeyLength]byte) int {
	if c := cmp.Compare(binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(b[:8])); c != 0 {
		return c
	}
	return cmp.Compare(binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(b[8:]))
}

// An order key is two big-endian uint64s (OrderBytes, CompareOrder).
var _ = [1]struct{}{}[OrderKeyLength-16]

// CreatedOf returns the creation instant (unix ns) that OrderBytes encoded.
func CreatedOf(order [OrderKeyLength]byte) int64 {
	return int64(binary.BigEndian.Uint64(order[8:]) ^ (1 << 63))
}

// NodeKey is the key of a node record.
func NodeKey(tenant, id string) []byte { return NewKey(TagNode, tenant).Last(id) }

// FenceKey is the key of a deleted node's last fence.
func FenceKey(tenant, id string) []byte { return NewKey(TagFence, tenant).Last(id) }

// LimitKey is the key of a limit on a concurrency key (or prefix).
func LimitKey(tenant, key string) []byte { return NewKey(TagLimit, tenant).Last(key) }

// BudgetKey is the key of a usage budget on a concurrency key.
func BudgetKey(tenant, key string) []byte { return NewKey(TagBudget, tenant).Last(key) }

// QueueKey is the key of a queue's settings.
func QueueKey(tenant, queue string) []byte { return NewKey(TagQueue, tenant).Last(queue) }

// LiveEdgeKey is the key of a live edge.
func LiveEdgeKey(tenant, from, typ, to string) []byte {
	return NewKey(TagEdge, tenant).Str(from).Str(typ).Last(to)
}

// RetiredEdgeKey is the key of a retired edge, from one side (tag TagRetiredOut or TagRetiredIn).
func RetiredEdgeKey(tag byte, tenant, a, typ, b string, seq uint64) []byte {
	return NewKey(tag, tenant).Str(a).Str(typ).Str(b).U64(seq).Bytes()
}

// EventKey is the key of an event group.
func EventKey(tenant string, seq uint64) []byte { return NewKey(TagEvent, tenant).U64(seq).Bytes() }

// NodeEventKey is the key of a node's pointer key to an event group.
func NodeEventKey(tenant, id string, seq uint64) []byte {
	return NewKey(TagNodeEvent, tenant).Str(id).U64(seq).Bytes()
}

// CommentKey is the key of a comment.
func CommentKey(tenant, id string, created int64, seq uint64) []byte {
	return NewKey(TagComment, tenant).Str(id).U64(uint64(created)).U64(seq).Bytes()
}

// TenantKey is the key of the tenant record.
func TenantKey(tenant string) []byte { return NewKey(TagTenant, tenant).Bytes() }

// IdempotencyKey is the key of an idempotency record.
func IdempotencyKey(tenant, key string) []byte { return NewKey(TagIdempotency, tenant).Last(key) }

// ClaimIdempotencyKey is the key of a claim's idempotency record. Its extra
// part keeps a claim's keys apart from a create's: a client key never holds
// KeySeparator, so no create's key can equal a claim's.
func ClaimIdempotencyKey(tenant, key string) []byte {
	return NewKey(TagIdempotency, tenant).Str("claim").Last(key)
}

// APIKeyKey is the key of an API key record.
func APIKeyKey(tenant, id string) []byte { return NewKey(TagAPIKey, tenant).Last(id) }

// MessageKey is the key of a message record.
func MessageKey(tenant, id string) []byte { return NewKey(TagMessage, tenant).Last(id) }

// WorkerKey is the key of a worker heartbeat record.
func WorkerKey(tenant, by, worker string) []byte {
	return NewKey(TagWorker, tenant).Str(by).Last(worker)
}

// BlobKey is the key of a blob record.
func BlobKey(tenant, sha string) []byte { return NewKey(TagBlob, tenant).Last(sha) }

// ScheduleKey is the key of a schedule record.
func ScheduleKey(tenant, id string) []byte { return NewKey(TagSchedule, tenant).Last(id) }

// ScheduleRunKey is the key of a schedule run record.
func ScheduleRunKey(tenant, id string, seq uint64) []byte {
	return NewKey(TagScheduleRun, tenant).Str(id).U64(seq).Bytes()
}

// RetentionKey is the key of a tenant's retention mark.
func RetentionKey(tenant string) []byte { return NewKey(TagRetention, tenant).Bytes() }

// PutU64 is the big-endian bytes of v.
func PutU64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// Uint64FromBytes is the number PutU64 wrote.
func Uint64FromBytes(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// SplitKey splits the parts of a key after its tag: tenant, then the
// separated parts; the last part runs to the end (it may hold fixed-width
// numbers, which can contain the separator byte, only when n says so).
func SplitKey(key []byte, n int) [][]byte {
	if len(key) < 2 {
		return nil
	}
	var parts [][]byte
	rest := key[2:]
	for len(parts) < n-1 {
		i := bytes.IndexByte(rest, KeySeparator)
		if i < 0 {
			return nil
		}
		parts = append(parts, rest[:i])
		rest = rest[i+1:]
	}
	return append(parts, rest)
}
