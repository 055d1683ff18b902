package graph

import (
	"encoding/binary"
)

// Key layout. Every tenant record starts with a one-byte tag and the tenant id,
// so a range over one tenant's keys can never reach another's. Variable-length
// parts are separated by 0x00, which no id, tenant, type or queue may contain;
// numbers are fixed-width big-endian so that byte order is numeric order.
//
//	n|t|id                          node record
//	F|t|id                          last fence of a deleted node (fences never repeat)
//	O|t|from|type|to                live edge, outgoing side (record)
//	I|t|to|type|from                live edge, incoming side (record)
//	P|t|from|type|to|seq            retired edge, outgoing side (record)
//	Q|t|to|type|from|seq            retired edge, incoming side (record)
//	o|t|order|id                    every node, in list order
//	s|t|status|order|id             nodes by status
//	q|t|queue|status|order|id       nodes by queue and status
//	c|t|parent|order|id             nodes by parent
//	L|t|id                          node with a live lease (server-wide scan at start)
//	r|t|queue|order|id              ready index: queued, no unmet blocker (value: run_at ms or 0)
//	b|t|id                          blocker counts: unmet depends_on, unfinished children
//	D|t|id                          how many live depends_on edges point at the node
//	U|t|queue                       queue settings (paused, max_running)
//	v|t|seq                         event
//	w|t|id|seq                      event of one node
//	C|t|id|created|seq              comment on a node (created: the node's creation instant, see comment.go)
//	T|t                             tenant record
//	K|t|keyid                       API key record
//	i|t|key                         idempotency record (expires with a Badger TTL)
//	W|t|by|worker                   worker heartbeat record (expires with a Badger TTL)
//
// order is 16 bytes: priority descending, then creation time ascending.
const (
	tagNode        = 'n'
	tagFence       = 'F'
	tagEdgeOut     = 'O'
	tagEdgeIn      = 'I'
	tagRetiredOut  = 'P'
	tagRetiredIn   = 'Q'
	tagOrder       = 'o'
	tagByStatus    = 's'
	tagByQueue     = 'q'
	tagByParent    = 'c'
	tagLiveLease   = 'L'
	tagReady       = 'r'
	tagBlockers    = 'b'
	tagDependents  = 'D'
	tagQueue       = 'U'
	tagEvent       = 'v'
	tagNodeEvent   = 'w'
	tagComment     = 'C'
	tagTenant      = 'T'
	tagAPIKey      = 'K'
	tagIdempotency = 'i'
	tagWorker      = 'W'
	keySeparator   = 0x00
	orderKeyLength = 16
)

// keyBuilder appends key parts; parts are separated by keySeparator.
type keyBuilder struct{ b []byte }

func newKey(tag byte, tenant string) *keyBuilder {
	b := make([]byte, 0, 64)
	b = append(b, tag, keySeparator)
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

func nodeKey(tenant, id string) []byte { return newKey(tagNode, tenant).last(id) }

func fenceKey(tenant, id string) []byte { return newKey(tagFence, tenant).last(id) }

func orderKey(tenant string, order []byte, id string) []byte {
	k := newKey(tagOrder, tenant)
	k.b = append(k.b, order...)
	return k.last(id)
}

func statusKey(tenant, status string, order []byte, id string) []byte {
	k := newKey(tagByStatus, tenant).str(status)
	k.b = append(k.b, order...)
	return k.last(id)
}

func queueKey(tenant, queue, status string, order []byte, id string) []byte {
	k := newKey(tagByQueue, tenant).str(queue).str(status)
	k.b = append(k.b, order...)
	return k.last(id)
}

func parentKey(tenant, parent string, order []byte, id string) []byte {
	k := newKey(tagByParent, tenant).str(parent)
	k.b = append(k.b, order...)
	return k.last(id)
}

func readyKey(tenant, queue string, order []byte, id string) []byte {
	k := newKey(tagReady, tenant).str(queue)
	k.b = append(k.b, order...)
	return k.last(id)
}

func queueRecordKey(tenant, queue string) []byte { return newKey(tagQueue, tenant).last(queue) }

func blockersKey(tenant, id string) []byte { return newKey(tagBlockers, tenant).last(id) }

func dependentsKey(tenant, id string) []byte { return newKey(tagDependents, tenant).last(id) }

func liveLeaseKey(tenant, id string) []byte { return newKey(tagLiveLease, tenant).last(id) }

func edgeKey(tag byte, tenant, a, typ, b string) []byte {
	return newKey(tag, tenant).str(a).str(typ).last(b)
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

func workerKey(tenant, by, worker string) []byte {
	return newKey(tagWorker, tenant).str(by).last(worker)
}

// idAfterOrder returns the node id of an index key whose order bytes start at
// offset prefixLen.
func idAfterOrder(key []byte, prefixLen int) string {
	return string(key[prefixLen+orderKeyLength:])
}
