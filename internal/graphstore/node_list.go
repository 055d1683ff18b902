package graphstore

import (
	"encoding/base64"
	"slices"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/records"
)

// NodeQuery filters and pages a node list. Empty fields do not filter.
type NodeQuery struct {
	Type, Status, Queue, Label, Target, Parent, Holder string
	// Search, when set, keeps the nodes whose id or title contains it,
	// ignoring case (a walk of the chosen index, for people and dashboards).
	Search string
	// Created and Updated keep the nodes whose created_at, updated_at fall
	// in the range.
	Created, Updated TimeRange
	// Match, when set, is a further predicate (readiness, for example) that
	// the caller evaluates in the same snapshot.
	Match  func(*Tx, *records.Node) (bool, error)
	Limit  int
	Cursor string
	// ScanBudget, when above zero, bounds the records one call reads: once
	// it has read that many without filling the page, it answers the
	// matches so far (perhaps none) and a cursor that goes on from the last
	// record read, so a filter that matches little never costs a walk of
	// the whole tenant in one request.
	ScanBudget int
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
// It walks the most selective in-memory index the filters allow and reads
// each record from the transaction's snapshot, checking the filters on it.
func (tx *Tx) NodeList(tenant string, q NodeQuery) ([]*records.Node, string, error) {
	status := q.Status
	if q.Holder != "" && status == "" {
		status = string(records.StatusRunning)
	}
	var kind byte
	switch {
	case q.Parent != "":
		kind = cursorParent
	case q.Queue != "" && status != "":
		kind = cursorQueue
	case status != "":
		kind = cursorStatus
	default:
		kind = cursorAll
	}
	var pivot *indexes.NodeEntry
	if q.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		if err != nil || len(raw) < 1+records.OrderKeyLength || raw[0] != kind {
			return nil, "", fault.Invalidf("cursor", "not a cursor of this list")
		}
		pivot = indexes.ListPivot(indexes.NodeRef{Tenant: tenant, ID: string(raw[1+records.OrderKeyLength:])}, raw[1:1+records.OrderKeyLength])
	}
	which := indexes.ListIndex{Parent: q.Parent, Queue: q.Queue, Status: records.Status(status)}
	tx.store.table.SyncLists()
	limit := q.Limit
	if limit < 1 {
		return nil, "", fault.Invalidf("limit", "must be at least 1")
	}
	var out []*records.Node
	next := ""
	const chunk = 128
	read := 0
	var lastRead *records.Node
	for done := false; !done; {
		ids, last := tx.store.table.Ascend(tenant, &which, pivot, chunk)
		if len(ids) < chunk {
			done = true
		}
		pivot = last
		for _, id := range ids {
			if q.ScanBudget > 0 && read >= q.ScanBudget && lastRead != nil {
				// The budget is spent with the page short and id still to
				// read: the next call goes on from the last record read.
				return out, encodeCursor(kind, lastRead.Order(), lastRead.ID), nil
			}
			read++
			n, err := tx.NodeGet(tenant, id)
			if _, gone := err.(*fault.NotFound); gone {
				continue // not durable yet, or deleted since
			}
			if err != nil {
				return nil, "", err
			}
			lastRead = n
			ok, err := matches(tx, n, q, status)
			if err != nil {
				return nil, "", err
			}
			if !ok {
				continue
			}
			if len(out) == limit {
				// One more match exists: the page ends at the previous node.
				next = encodeCursor(kind, out[len(out)-1].Order(), out[len(out)-1].ID)
				return out, next, nil
			}
			out = append(out, n)
		}
	}
	return out, next, nil
}

func encodeCursor(kind byte, order []byte, id string) string {
	b := append([]byte{kind}, order...)
	b = append(b, id...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// NodeMatches reports whether n is one NodeList of q would list (its
// Limit, Cursor and ScanBudget aside), in tx's snapshot.
func (tx *Tx) NodeMatches(n *records.Node, q NodeQuery) (bool, error) {
	status := q.Status
	if q.Holder != "" && status == "" {
		status = string(records.StatusRunning)
	}
	return matches(tx, n, q, status)
}

func matches(tx *Tx, n *records.Node, q NodeQuery, status string) (bool, error) {
	switch {
	case q.Type != "" && n.Type != q.Type,
		status != "" && string(n.Status) != status,
		q.Queue != "" && n.Queue != q.Queue,
		q.Target != "" && n.Target != q.Target,
		q.Parent != "" && n.Parent != q.Parent,
		q.Label != "" && !slices.Contains(n.Labels, q.Label),
		q.Holder != "" && (n.Lease == nil || n.Lease.By != q.Holder),
		!q.Created.Contains(n.CreatedAt),
		!q.Updated.Contains(n.UpdatedAt),
		q.Search != "" && !containsFold(n.ID, q.Search) && !containsFold(n.Title, q.Search):
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
	t := tx.store.table
	t.SyncLists()
	tenants := []string{tenant}
	if tenant == "" {
		tenants = t.ListedTenants()
	}
	for _, name := range tenants {
		pivot := after
		if tenant == "" {
			pivot = ""
		}
		for {
			ids := t.LeasedAfter(name, pivot, 128)
			for _, id := range ids {
				more, err := fn(name, id)
				if err != nil || !more {
					return err
				}
			}
			if len(ids) < 128 {
				break
			}
			pivot = ids[len(ids)-1]
		}
	}
	return nil
}
