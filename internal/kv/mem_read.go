package kv

import (
	"strings"
	"time"

	"github.com/google/btree"
)

// memPage is how many keys a scan of the in-memory engine copies out of
// its tree at a time.
const memPage = 64

// memReader reads one copy of the in-memory engine's committed state.
type memReader struct{ t *btree.BTreeG[memItem] }

func (r *memReader) get(key []byte) ([]byte, bool, error) {
	it, ok := r.t.Get(memItem{key: string(key)})
	if !ok || expired(it.expiresAt, time.Now()) {
		return nil, false, nil
	}
	return it.val, true, nil
}

func (r *memReader) has(key []byte) (bool, error) {
	_, ok, err := r.get(key)
	return ok, err
}

func (r *memReader) discard() {}

func (r *memReader) scan(prefix, after []byte, reverse, _ bool) cursor {
	c := &memCursor{t: r.t, prefix: string(prefix), reverse: reverse, now: time.Now()}
	if after != nil {
		c.from, c.started = string(after), true
	}
	c.fill()
	return c
}

// memCursor walks the keys under a prefix a page at a time; from is the
// last key handed out (or the scan's after), which the next page starts
// strictly beyond.
type memCursor struct {
	t       *btree.BTreeG[memItem]
	prefix  string
	reverse bool
	now     time.Time
	from    string
	started bool // from is set
	page    []memItem
	i       int
	ended   bool // the tree holds no more keys under the prefix
}

// fill reads the next page when the current one is used up.
func (c *memCursor) fill() {
	for c.i >= len(c.page) && !c.ended {
		c.page, c.i = c.page[:0], 0
		full := false
		take := func(it memItem) bool {
			switch {
			case c.started && it.key == c.from:
				return true
			case !strings.HasPrefix(it.key, c.prefix):
				// Below the prefix's keys going forward, or above them
				// going back: not there yet. Past them: done.
				if (it.key < c.prefix) != c.reverse {
					return true
				}
				c.ended = true
				return false
			}
			c.from, c.started = it.key, true
			if !expired(it.expiresAt, c.now) {
				c.page = append(c.page, it)
			}
			full = len(c.page) == memPage
			return !full
		}
		switch {
		case !c.reverse && c.started:
			c.t.AscendGreaterOrEqual(memItem{key: c.from}, take)
		case !c.reverse:
			c.t.AscendGreaterOrEqual(memItem{key: c.prefix}, take)
		case c.started:
			c.t.DescendLessOrEqual(memItem{key: c.from}, take)
		default:
			if end, ok := prefixEnd(c.prefix); ok {
				c.t.DescendLessOrEqual(memItem{key: end}, take)
			} else {
				c.t.Descend(take)
			}
		}
		if !full {
			c.ended = true // the walk ran off the end of the tree
		}
	}
}

// prefixEnd is the least key above every key with prefix p; false when
// there is none (p is empty or all 0xff).
func prefixEnd(p string) (string, bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

func (c *memCursor) valid() bool            { return c.i < len(c.page) }
func (c *memCursor) key() []byte            { return []byte(c.page[c.i].key) }
func (c *memCursor) value() ([]byte, error) { return c.page[c.i].val, nil }
func (c *memCursor) expiresAt() uint64      { return c.page[c.i].expiresAt }
func (c *memCursor) next()                  { c.i++; c.fill() }
func (c *memCursor) err() error             { return nil }
func (c *memCursor) close()                 {}
