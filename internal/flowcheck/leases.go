package flowcheck

import (
	"cmp"
	"slices"
)

// LeaseID is a lease: a node and the fence it was granted with.
type LeaseID struct {
	Node  string `json:"node"`
	Fence uint64 `json:"fence"`
}

// lease is what the history says of one lease.
type lease struct {
	id    LeaseID
	keys  []string
	queue string
	// granted is the answered call that handed it out; zero when the
	// history holds only re-claims of it (its grant went unanswered).
	granted Op
	expires int64 // the latest expiry its holder was told
	end     int64 // the first end call's send; 0 when none
	// from and to bound the interval it was surely live: [from, to), from
	// the first answer that showed it held.
	from, to int64
}

// leases gathers the history by lease. A grant of a lease already granted
// (the holder's re-claim) is a renewal. Renewals and ends of a lease the
// history never saw granted or re-claimed are left out: they cannot make
// it surely live.
func leases(ops []Op, slack int64) []*lease {
	byID := map[LeaseID]*lease{}
	var out []*lease
	ordered := slices.Clone(ops)
	slices.SortStableFunc(ordered, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
	for _, op := range ordered {
		if op.Kind != Grant {
			continue
		}
		id := LeaseID{op.Node, op.Fence}
		l := byID[id]
		if l == nil {
			l = &lease{id: id, keys: op.Keys, queue: op.Queue, from: op.Return, expires: op.Expires}
			byID[id] = l
			out = append(out, l)
		}
		l.from = min(l.from, op.Return)
		l.expires = max(l.expires, op.Expires)
		if !op.Renewed && l.granted.Kind == 0 {
			l.granted = op
		}
	}
	for _, op := range ordered {
		l := byID[LeaseID{op.Node, op.Fence}]
		if l == nil {
			continue
		}
		switch op.Kind {
		case Renew:
			l.expires = max(l.expires, op.Expires)
		case End:
			if l.end == 0 || op.Call < l.end {
				l.end = op.Call
			}
		}
	}
	for _, l := range out {
		l.to = l.expires - slack
		if l.end != 0 {
			l.to = min(l.to, l.end)
		}
	}
	return out
}
