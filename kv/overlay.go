package kv

import (
	"strings"

	"github.com/google/btree"
)

// overlay is an ordered set of written keys with their values (or deletions).
type overlay struct {
	vals map[string]value
	keys *btree.BTreeG[string]
	size int64 // estimated bytes, for Badger's transaction limits
}

// value is one written key's new state.
type value struct {
	val       []byte
	deleted   bool
	expiresAt uint64 // unix seconds; 0 = never (Badger's TTL)
}

func newOverlay() *overlay {
	return &overlay{vals: map[string]value{}, keys: btree.NewG(32, func(a, b string) bool { return a < b })}
}

func (o *overlay) put(k string, v value) {
	old, ok := o.vals[k]
	if !ok {
		o.keys.ReplaceOrInsert(k)
		o.size += int64(len(k)) + 24 // key, meta and version overhead
	} else {
		o.size -= int64(len(old.val))
	}
	o.size += int64(len(v.val))
	o.vals[k] = v
}

func (o *overlay) len() int { return len(o.vals) }

// under lists the keys with prefix p in order.
func (o *overlay) under(p string) []string {
	if o.keys.Len() == 0 {
		return nil
	}
	var out []string
	o.keys.AscendGreaterOrEqual(p, func(k string) bool {
		if !strings.HasPrefix(k, p) {
			return false
		}
		out = append(out, k)
		return true
	})
	return out
}

// absorb folds the writes of o2 (a later layer) into o.
func (o *overlay) absorb(o2 *overlay) {
	for k, v := range o2.vals {
		o.put(k, v)
	}
}
