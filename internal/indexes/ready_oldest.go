package indexes

import (
	"encoding/binary"
	"math"

	"github.com/tether-run/tether/internal/records"
)

// oldestCreated is when q's oldest claimable entry was created (unix ns),
// false when q has none. The mirror keeps no tree in age order for it (one
// more tree slot per queued node, and one more insert and delete on every
// claim): the claim indexes are in claim order, priority band first and
// oldest first within a band, so the oldest entry is the first of some band
// of some claim index, and each band's first is one seek (eachBandFirst).
// That is O(b·t·log n) for b priorities in use and t claim indexes (the
// open one and one per target): QueueStats' and the metrics' cost, never a
// claim's.
func (q *queueMirror) oldestCreated() (int64, bool) {
	oldest, found := int64(0), false
	each := func(ix *claimIndex) {
		eachBandFirst(ix.all, func(e *NodeEntry) {
			if c := records.CreatedOf(e.State.order); !found || c < oldest {
				oldest, found = c, true
			}
		})
	}
	each(q.open)
	for _, ix := range q.targeted {
		each(ix)
	}
	return oldest, found
}

// eachBandFirst calls fn with the first entry, in claim order, of each
// priority band in t: its min, then for each next band one seek to the
// first entry past the band before it (an order key's first half is its
// band, records.OrderBytes).
func eachBandFirst(t *readyTree, fn func(e *NodeEntry)) {
	first, ok := t.Min()
	var pivot NodeEntry // order (band, the least created), id "": before every entry of the band
	for ok {
		fn(first)
		band := binary.BigEndian.Uint64(first.State.order[:8])
		if band == math.MaxUint64 {
			return
		}
		binary.BigEndian.PutUint64(pivot.State.order[:8], band+1)
		ok = false
		t.AscendGreaterOrEqual(&pivot, func(e *NodeEntry) bool {
			first, ok = e, true
			return false
		})
	}
}
