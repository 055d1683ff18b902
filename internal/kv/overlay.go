package kv

import (
	"slices"
	"strings"
)

// overlay is a set of written keys with their values (or deletions). Once
// handed to the logger it is never written again, so readers on other
// goroutines may read it.
type overlay struct {
	vals map[string]value
	size int64 // estimated bytes, for Badger's transaction limits
}

// value is one written key's new state.
type value struct {
	val       []byte
	deleted   bool
	expiresAt uint64 // unix seconds; 0 = never (Badger's TTL)
	txn       uint64 // the write transaction that put it (Txn.id; 0: none)
}

// keyOverhead is what size counts per key beyond its bytes: Badger's meta
// and version.
const keyOverhead = 24

func newOverlay() *overlay { return &overlay{vals: map[string]value{}} }

func (o *overlay) put(k string, v value) {
	old, ok := o.vals[k]
	o.putOver(k, v, old, ok)
}

// putOver is put when the caller has looked k up already: old, ok.
func (o *overlay) putOver(k string, v value, old value, ok bool) {
	if !ok {
		o.size += int64(len(k)) + keyOverhead
	} else {
		o.size -= int64(len(old.val))
	}
	o.size += int64(len(v.val))
	o.vals[k] = v
}

// remove takes k out (undoing a write that added it).
func (o *overlay) remove(k string) {
	if old, ok := o.vals[k]; ok {
		o.size -= int64(len(k)) + keyOverhead + int64(len(old.val))
		delete(o.vals, k)
	}
}

func (o *overlay) len() int { return len(o.vals) }

// bytes is the bytes of the keys and values written (size without the
// per-key overhead it counts).
func (o *overlay) bytes() int64 { return o.size - keyOverhead*int64(len(o.vals)) }

// under lists the keys with prefix p in order. It walks every key: scans
// inside a write or over writes in flight are rare and small, and keeping
// the keys ordered on every write cost more than these walks.
func (o *overlay) under(p string) []string {
	var out []string
	for k := range o.vals {
		if strings.HasPrefix(k, p) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// absorb folds the writes of o2 (a later segment) into o.
func (o *overlay) absorb(o2 *overlay) {
	for k, v := range o2.vals {
		o.put(k, v)
	}
}
