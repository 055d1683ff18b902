package indexes

import (
	"encoding/binary"
	"iter"
	"unique"

	"github.com/tether-run/tether/internal/records"
)

// What a node's in-memory state names (its queue, type, target, parent,
// lease holder and label set) is shared by many nodes, so the state holds
// each as an atom: one word, interned (unique), compared by ==. A million
// nodes of one queue hold one copy of its name, and a set of labels costs
// a node one word and no allocation of its own.

// atom is an interned string in one word; the zero atom is "".
type atom struct{ h unique.Handle[string] }

// nameOf interns s.
func atomOf(s string) atom {
	if s == "" {
		return atom{}
	}
	return atom{unique.Make(s)}
}

// String is the atom's string.
func (n atom) String() string {
	if n == (atom{}) {
		return ""
	}
	return n.h.Value()
}

// labelSetOf interns a node's labels, in their order, as one atom: each
// label prefixed with its length (labels may hold any character). No labels
// is the zero atom.
func labelSetOf(labels []string) atom {
	if len(labels) == 0 {
		return atom{}
	}
	size := 0
	for _, l := range labels {
		size += binary.MaxVarintLen64 + len(l)
	}
	b := make([]byte, 0, size)
	for _, l := range labels {
		b = binary.AppendUvarint(b, uint64(len(l)))
		b = append(b, l...)
	}
	return atomOf(string(b))
}

// eachLabel yields the labels of a label set, in order, without allocating.
func (n atom) eachLabel() iter.Seq[string] {
	return func(yield func(string) bool) {
		s := n.String()
		for len(s) > 0 {
			var l uint64
			i := 0
			for shift := 0; i < len(s); shift += 7 {
				c := s[i]
				i++
				l |= uint64(c&0x7f) << shift
				if c < 0x80 {
					break
				}
			}
			s = s[i:]
			if !yield(s[:l]) {
				return
			}
			s = s[l:]
		}
	}
}

// hasLabel reports whether the label set holds l.
func (n atom) hasLabel(l string) bool {
	for have := range n.eachLabel() {
		if have == l {
			return true
		}
	}
	return false
}

// labelList is the labels of a label set as a new slice (nil for none).
func (n atom) labelList() []string {
	var out []string
	for l := range n.eachLabel() {
		out = append(out, l)
	}
	return out
}

// StatusCode is a Status in one byte, as the in-memory state keeps it.
type StatusCode uint8

// statusCodes lists the statuses by code; code 0 is no status.
var statusCodes = [...]records.Status{"", records.StatusOpen, records.StatusQueued, records.StatusRunning, records.StatusDone, records.StatusFailed, records.StatusDead, records.StatusCancelled, records.StatusExpired}

// The codes the state compares with (their places in statusCodes).
const (
	codeQueued  StatusCode = 2
	codeRunning StatusCode = 3
)

// codeOf is s's code (0 for a status that is none of the statuses).
func codeOf(s records.Status) StatusCode {
	for i, v := range statusCodes {
		if v == s {
			return StatusCode(i)
		}
	}
	return 0
}

// Status is the code's status.
func (c StatusCode) Status() records.Status {
	if int(c) < len(statusCodes) {
		return statusCodes[c]
	}
	return ""
}

// Terminal is Status.Terminal of the code's status.
func (c StatusCode) Terminal() bool { return c.Status().Terminal() }
