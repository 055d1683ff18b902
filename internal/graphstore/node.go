package graphstore

import (
	"fmt"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/records"
)

// Names (client node ids, types, queues) are ASCII: a letter or digit, then
// up to max-1 letters, digits or any of "._:-". validName checks that by
// hand: it runs on every request that names a node or a queue, where the
// equivalent regexp (^[A-Za-z0-9][A-Za-z0-9._:-]{0,max-1}$, kept in
// names_test.go to compare against) cost ~1.5 % of the server's CPU.
const (
	maxClientIDLength = 128
	maxTypeLength     = 64
	maxQueueLength    = 128
)

func validName(s string, max int) bool {
	if s == "" || len(s) > max || !alnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '.' && c != '_' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ValidID reports whether id is a well-formed node id: a client id, or a
// system id such as identity:<sub>, which may carry any printable character
// except '/' (ids appear in URL paths).
func ValidID(id string) bool {
	if validName(id, maxClientIDLength) {
		return true
	}
	// Only the characters are checked: an identity node made before the
	// reserved prefixes or the visible-characters rule (subject.go) stays
	// addressable.
	return IsIdentityID(id) && identityIDChars(id[len(IdentityPrefix):])
}

// ValidClientID reports whether id may be chosen by a client.
func ValidClientID(id string) bool {
	return validName(id, maxClientIDLength) && !IsIdentityID(id)
}

// ValidType reports whether t is a well-formed node type.
func ValidType(t string) bool { return validName(t, maxTypeLength) }

// ValidQueue reports whether q is a well-formed queue name.
func ValidQueue(q string) bool { return validName(q, maxQueueLength) }

// NodeGet returns the node or a fault.NotFound. On the writer a live node
// is decoded from memory; a terminal one, and every node in a View, is read
// from the store (in a View: as durable).
func (tx *Tx) NodeGet(tenant, id string) (*records.Node, error) {
	var st *indexes.NodeState
	if tx.writable {
		if st = tx.state(indexes.NodeRef{Tenant: tenant, ID: id}); st == nil {
			return nil, &fault.NotFound{What: "node", ID: id}
		}
	}
	b, err := tx.storedRecord(tenant, id, st)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, &fault.NotFound{What: "node", ID: id}
	}
	n := new(records.Node)
	if _, err := n.UnmarshalMsg(b); err != nil {
		// The key is built only for the error: NodeGet is on every hot path.
		return nil, fmt.Errorf("error decoding %q: %w", records.NodeKey(tenant, id), err)
	}
	return n, nil
}

// storedRecord is the node's record as last written (nil for none): kept in
// memory while the node is live (st, its state in a write transaction),
// read otherwise.
func (tx *Tx) storedRecord(tenant, id string, st *indexes.NodeState) ([]byte, error) {
	if st != nil && st.Record != nil {
		return *st.Record, nil
	}
	ref := indexes.NodeRef{Tenant: tenant, ID: id}
	if tx.read.b != nil && tx.read.ref == ref {
		return tx.read.b, nil
	}
	b, _, err := tx.kv.Get(records.NodeKey(tenant, id))
	if err == nil && b != nil && tx.writable {
		tx.read.ref, tx.read.b = ref, b
	}
	return b, err
}

// forgetRead drops the record storedRecord last read, as the transaction is
// about to write the node's key.
func (tx *Tx) forgetRead() { tx.read.b = nil }

// NodeExists reports whether the node exists.
func (tx *Tx) NodeExists(tenant, id string) (bool, error) {
	if tx.writable {
		return tx.state(indexes.NodeRef{Tenant: tenant, ID: id}) != nil, nil
	}
	return tx.kv.Has(records.NodeKey(tenant, id))
}

// NodeInsert stores a new node and a created event. The caller has filled
// every field; Version is set to 1. A taken id is a fault.AlreadyExists.
func (tx *Tx) NodeInsert(n *records.Node, by string) error {
	if !tx.writable {
		return errReadOnly
	}
	ref := indexes.NodeRef{Tenant: n.Tenant, ID: n.ID}
	if tx.state(ref) != nil {
		return &fault.AlreadyExists{What: "node", ID: n.ID}
	}
	// A node re-created under a deleted node's id continues its fence numbers,
	// so a holder of the old node can never present a fence the new one issues.
	if f, ok := tx.fences[ref]; ok {
		n.LastFence = f
	} else if f, ok := tx.store.table.Fences[ref]; ok {
		n.LastFence = f
	}
	// Retention removed nodes whose ids left no fence record: start above
	// every fence they issued.
	n.LastFence = max(n.LastFence, tx.mark(n.Tenant).fenceFloor)
	n.Version = 1
	n.CreatedAt, n.UpdatedAt = tx.now.UTC(), tx.now.UTC()
	if err := tx.blobRefs(n.Tenant, nil, n.Blobs); err != nil {
		return err
	}
	b, err := tx.putNode(n, nil)
	if err != nil {
		return err
	}
	st := indexes.StateOf(n, b, tx.store.liveRecords)
	tx.setState(ref, &st)
	return tx.Emit(n.Tenant, records.EventCreated, n.ID, by, map[string]any{"type": n.Type, "status": n.Status})
}

// putNode encodes and writes n, with the event pointers of the record it
// replaces (node_events.go); the encoding, exactly sized, is what the
// in-memory state keeps of a live node.
func (tx *Tx) putNode(n *records.Node, replaced []byte) ([]byte, error) {
	if ac, ok := tx.assigned[indexes.NodeRef{Tenant: n.Tenant, ID: n.ID}]; ok {
		n.Assigned = ac.rec
		if !ac.written {
			tx.assigned[indexes.NodeRef{Tenant: n.Tenant, ID: n.ID}] = assignedChange{rec: ac.rec, written: true}
		}
	}
	b, err := n.MarshalMsg(tx.store.scratch[:0])
	if err != nil {
		return nil, err
	}
	tx.store.scratch = b
	b = withPointersOf(b, replaced)
	tx.forgetRead()
	return b, tx.kv.Set(records.NodeKey(n.Tenant, n.ID), b)
}

// NodePut stores a changed node: n is a node this transaction read (NodeGet
// decodes a private copy, so changing it changes nothing stored) and then
// changed. It bumps Version (from the version n was read at) and UpdatedAt,
// moves the node in the indexes and, when its status changed from the
// stored one, updates the blocker counts of its dependents and parent. It
// emits no event: the caller emits the one that names the change.
func (tx *Tx) NodePut(n *records.Node) error {
	if !tx.writable {
		return errReadOnly
	}
	st := tx.state(indexes.NodeRef{Tenant: n.Tenant, ID: n.ID})
	if st == nil {
		return &fault.NotFound{What: "node", ID: n.ID}
	}
	was := st.Status.Status()
	if st.HasBlobs || len(n.Blobs) > 0 {
		// The stored record names the blobs it held; only a node with
		// blobs, before or after, pays for reading it.
		stored, err := tx.NodeGet(n.Tenant, n.ID)
		if err != nil {
			return err
		}
		if err := tx.blobRefs(n.Tenant, stored.Blobs, n.Blobs); err != nil {
			return err
		}
	}
	n.Version++
	n.UpdatedAt = tx.now.UTC()
	if err := tx.NodePutQuiet(n); err != nil {
		return err
	}
	return tx.propagateStatus(was, n)
}

// NodePutQuiet stores a node whose change is lease bookkeeping only (a
// renewal): no version bump, no event, and Blobs as they were.
func (tx *Tx) NodePutQuiet(n *records.Node) error {
	if !tx.writable {
		return errReadOnly
	}
	st := tx.mut(indexes.NodeRef{Tenant: n.Tenant, ID: n.ID})
	if st == nil {
		return &fault.NotFound{What: "node", ID: n.ID}
	}
	replaced, err := tx.storedRecord(n.Tenant, n.ID, st)
	if err != nil {
		return err
	}
	b, err := tx.putNode(n, replaced)
	if err != nil {
		return err
	}
	held := st.HoldsSlots
	*st = st.WithRecord(n, b, tx.store.liveRecords)
	tx.noteSlots(n, held, st.HoldsSlots)
	return nil
}

// NodeDelete removes the node and keeps its last fence; the blobs it named
// lose its reference. Edges are the caller's to retire.
func (tx *Tx) NodeDelete(n *records.Node, by string) error {
	if !tx.writable {
		return errReadOnly
	}
	ref := indexes.NodeRef{Tenant: n.Tenant, ID: n.ID}
	if err := tx.blobRefs(n.Tenant, n.Blobs, nil); err != nil {
		return err
	}
	// The events of a deleted node stay, and so do its pointers to them:
	// those in its record become keys.
	record, err := tx.storedRecord(n.Tenant, n.ID, tx.state(ref))
	if err != nil {
		return err
	}
	eachRecordPointer(record, func(seq uint64) {
		if err == nil {
			err = tx.kv.Set(records.NodeEventKey(n.Tenant, n.ID, seq), nil)
		}
	})
	if err != nil {
		return err
	}
	tx.forgetRead()
	if err := tx.kv.Delete(records.NodeKey(n.Tenant, n.ID)); err != nil {
		return err
	}
	if err := tx.kv.Set(records.FenceKey(n.Tenant, n.ID), records.PutU64(n.LastFence)); err != nil {
		return err
	}
	if tx.fences == nil {
		tx.fences = map[indexes.NodeRef]uint64{}
	}
	tx.fences[ref] = n.LastFence
	if st := tx.state(ref); st != nil {
		tx.noteSlots(n, st.HoldsSlots, false)
	}
	tx.setState(ref, nil)
	if err := tx.nodeGone(n.Tenant, n.ID); err != nil {
		return err
	}
	return tx.Emit(n.Tenant, records.EventDeleted, n.ID, by, map[string]any{"status": n.Status})
}
