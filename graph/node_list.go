package graph

import (
	"encoding/base64"
	"slices"

	"github.com/tether-run/tether/fault"
)

// NodeQuery filters and pages a node list. Empty fields do not filter.
type NodeQuery struct {
	Type, Status, Queue, Label, Target, Parent, Holder string
	// Match, when set, is a further predicate (readiness, for example) that
	// the caller evaluates in the same snapshot.
	Match  func(*Tx, *Node) (bool, error)
	Limit  int
	Cursor string
}

// index kinds, the first byte of a cursor, so that a cursor from one index is
// never applied to another.
const (
	cursorAll    = 'a'
	cursorStatus = 's'
	cursorQueue  = 'q'
	cursorParent = 'p'
)

// NodeList returns one page of nodes in list order (priority high first, then
// creation old first, then id) and the cursor of the next page ("" at the end).
// It walks the most selective index the filters allow.
func (tx *Tx) NodeList(tenant string, q NodeQuery) ([]*Node, string, error) {
	status := q.Status
	if q.Holder != "" && status == "" {
		status = string(StatusRunning)
	}
	var kind byte
	var prefix []byte
	switch {
	case q.Parent != "":
		kind, prefix = cursorParent, newKey(tagByParent, tenant).str(q.Parent).bytes()
	case q.Queue != "" && status != "":
		kind, prefix = cursorQueue, newKey(tagByQueue, tenant).str(q.Queue).str(status).bytes()
	case status != "":
		kind, prefix = cursorStatus, newKey(tagByStatus, tenant).str(status).bytes()
	default:
		kind, prefix = cursorAll, newKey(tagOrder, tenant).bytes()
	}
	var after []byte
	if q.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		if err != nil || len(raw) < 1+orderKeyLength || raw[0] != kind {
			return nil, "", fault.Invalidf("cursor", "not a cursor of this list")
		}
		after = append(slices.Clone(prefix), raw[1:]...)
	}
	limit := q.Limit
	var out []*Node
	next := ""
	err := tx.scan(prefix, after, false, false, func(key, _ []byte) (bool, error) {
		id := idAfterOrder(key, len(prefix))
		n, err := tx.NodeGet(tenant, id)
		if err != nil {
			return false, err
		}
		ok, err := matches(tx, n, q, status)
		if err != nil || !ok {
			return err == nil, err
		}
		if len(out) == limit {
			// One more match exists: the page ends at the previous key.
			next = encodeCursor(kind, out[len(out)-1].order(), out[len(out)-1].ID)
			return false, nil
		}
		out = append(out, n)
		return true, nil
	})
	return out, next, err
}

func encodeCursor(kind byte, order []byte, id string) string {
	b := append([]byte{kind}, order...)
	b = append(b, id...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func matches(tx *Tx, n *Node, q NodeQuery, status string) (bool, error) {
	switch {
	case q.Type != "" && n.Type != q.Type,
		status != "" && string(n.Status) != status,
		q.Queue != "" && n.Queue != q.Queue,
		q.Target != "" && n.Target != q.Target,
		q.Parent != "" && n.Parent != q.Parent,
		q.Label != "" && !slices.Contains(n.Labels, q.Label),
		q.Holder != "" && (n.Lease == nil || n.Lease.By != q.Holder):
		return false, nil
	}
	if q.Match != nil {
		return q.Match(tx, n)
	}
	return true, nil
}

// LiveLeaseIDs calls fn with the id of every node of tenant holding a live
// lease record, in id order, starting after id `after` ("" from the start).
// tenant "" walks every tenant (start-up only).
func (tx *Tx) LiveLeaseIDs(tenant, after string, fn func(tenant, id string) (bool, error)) error {
	var prefix, start []byte
	if tenant == "" {
		prefix = []byte{tagLiveLease, keySeparator}
	} else {
		prefix = newKey(tagLiveLease, tenant).bytes()
		if after != "" {
			start = liveLeaseKey(tenant, after)
		}
	}
	return tx.scan(prefix, start, false, false, func(key, _ []byte) (bool, error) {
		rest := key[2:]
		for i, c := range rest {
			if c == keySeparator {
				return fn(string(rest[:i]), string(rest[i+1:]))
			}
		}
		return true, nil
	})
}
