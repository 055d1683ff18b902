package graphstore

import (
	"fmt"
	"slices"
	"time"

	"github.com/tinylib/msgp/msgp"

	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// Tx is one transaction: read-only from View, read-write inside Update. The
// domain methods (NodeGet, NodeInsert, EdgeInsert, ...) are the only way other
// packages touch records.
//
// A write transaction runs on the store's writer. It reads and changes the
// in-memory state through its own copies (nodes, edges), which apply folds
// into the table when it succeeds; its records go to a kv transaction.
type Tx struct {
	kv       *kv.Txn
	store    *Store
	now      time.Time
	writable bool

	nodes  map[indexes.NodeRef]*indexes.NodeState // changed in this transaction; nil: deleted
	edges  map[indexes.EdgeRef]*indexes.LiveEdge  // live edges added (or nil: retired) here
	fences map[indexes.NodeRef]uint64             // fences of nodes deleted here
	// assigned holds the assigned edges added (or nil: retired) here, to be
	// written into their nodes' records, and whether the record was written
	// since the edge changed.
	assigned map[indexes.NodeRef]assignedChange
	blobs    map[blobRef]*blobState // blobs changed here; nil: deleted

	seqs   map[string]uint64 // next event seq per tenant, applied on success
	events []records.Event
	marks  map[string]retentionMark // retention marks changed here (retention.go)

	// flowDelta is the slots of concurrency keys taken (+) and freed (-)
	// here; budgets the budgets whose spend changed here (flow_claim.go).
	flowDelta map[flowKey]int32
	budgets   map[flowKey]records.BudgetRecord

	// read is the record of a queued or open node that storedRecord last
	// read from the store in a write transaction, so a claim's read and
	// its write of the node read the store once; any write of a node's key
	// forgets it.
	read struct {
		ref indexes.NodeRef
		b   []byte
	}

	// last is the node state a write transaction looked up last (or set),
	// so the several lookups one op makes of a node (read, check, change,
	// move) cost one access to maps of up to millions of entries.
	last struct {
		ref indexes.NodeRef
		st  *indexes.NodeState
		ok  bool
	}
}

// txMaps are a write transaction's maps of changes, kept on the writer from
// one successful transaction to the next: cleared, a map keeps its room, so a
// transaction of many ops (a chunk of claims or completions) does not grow
// its maps from nothing each time. Maps that grew past maxSpareMap are
// dropped: ranging over a cleared map still walks its room, which a
// one-op transaction after a big one should not pay for. 256 holds a chunk
// of 128 completions or claims.
type txMaps struct {
	nodes    map[indexes.NodeRef]*indexes.NodeState
	edges    map[indexes.EdgeRef]*indexes.LiveEdge
	assigned map[indexes.NodeRef]assignedChange
}

const maxSpareMap = 256

// keep takes tx's maps for the next transaction. It runs last in tx.apply:
// no hook of tx reads them after that (OnDurable hooks never do), and the
// next transaction starts only after every hook of this one has run.
func (m *txMaps) keep(tx *Tx) {
	*m = txMaps{}
	if len(tx.nodes) <= maxSpareMap {
		m.nodes = tx.nodes
	}
	if len(tx.edges) <= maxSpareMap {
		m.edges = tx.edges
	}
	if len(tx.assigned) <= maxSpareMap {
		m.assigned = tx.assigned
	}
}

// lend gives the kept maps, cleared, to a new write transaction.
func (m *txMaps) lend(tx *Tx) {
	clear(m.nodes)
	clear(m.edges)
	clear(m.assigned)
	tx.nodes, tx.edges, tx.assigned = m.nodes, m.edges, m.assigned
	*m = txMaps{}
}

// Now is the instant this transaction acts at.
func (tx *Tx) Now() time.Time { return tx.now }

// OnCommit registers f to run on the writer right after this transaction
// succeeds (never if it does not), before the next transaction runs. What f
// changes is seen by later writes at once, and by readers possibly before
// the transaction is durable: use OnDurable for what readers must not see
// early.
func (tx *Tx) OnCommit(f func()) { tx.kv.OnApply(f) }

// OnDurable registers f to run once this transaction is on stable storage,
// in commit order.
func (tx *Tx) OnDurable(f func()) { tx.kv.OnDurable(f) }

var errReadOnly = kv.ErrReadOnly

// Records reads and writes, in this transaction, the records other packages
// own (tenants, API keys, workers, messages, schedules and their runs):
// the model only stores them, so they are reached through records.Txn
// rather than through methods of Tx.
func (tx *Tx) Records() records.Txn { return records.On(tx.kv) }

// state returns the in-memory state of a node as this transaction sees it
// (nil when there is no such node). The result is read-only: use mut to
// change it.
func (tx *Tx) state(ref indexes.NodeRef) *indexes.NodeState {
	if tx.last.ok && tx.last.ref == ref {
		return tx.last.st
	}
	if tx.nodes != nil {
		if st, ok := tx.nodes[ref]; ok {
			tx.remember(ref, st)
			return st
		}
	}
	t := tx.store.table
	if !tx.writable {
		t.Mu.RLock()
		defer t.Mu.RUnlock()
	}
	e, ok := t.Nodes.Get(ref)
	if !ok {
		return nil
	}
	if !tx.writable {
		st := e.State
		return &st
	}
	tx.remember(ref, &e.State)
	return &e.State
}

// remember makes st the last state looked up, as ref's.
func (tx *Tx) remember(ref indexes.NodeRef, st *indexes.NodeState) {
	tx.last.ref, tx.last.st, tx.last.ok = ref, st, true
}

// NodesChanged is how many nodes this transaction has changed so far.
func (tx *Tx) NodesChanged() int { return len(tx.nodes) }

// mut returns this transaction's own copy of a node's state, to change
// (nil when there is no such node).
func (tx *Tx) mut(ref indexes.NodeRef) *indexes.NodeState {
	if st, ok := tx.nodes[ref]; ok {
		return st
	}
	cur := tx.state(ref)
	if cur == nil {
		return nil
	}
	st := *cur
	tx.setState(ref, &st)
	return &st
}

func (tx *Tx) setState(ref indexes.NodeRef, st *indexes.NodeState) {
	if tx.nodes == nil {
		tx.nodes = map[indexes.NodeRef]*indexes.NodeState{}
	}
	tx.nodes[ref] = st
	tx.remember(ref, st)
}

// apply folds this transaction's changes into the in-memory state, through
// a change set (indexes.ChangeSet), and its last event seqs into the store's. It
// runs on the writer when the transaction has succeeded.
func (tx *Tx) apply() {
	s := tx.store
	defer s.spare.keep(tx)
	for tenant, seq := range tx.seqs {
		s.seqs[tenant] = seq
	}
	if len(tx.blobs) > 0 {
		tx.applyBlobs()
	}
	cs := indexes.ChangeSet{Now: tx.now.UnixNano(), Nodes: tx.nodes, Edges: tx.edges, Fences: tx.fences, Events: tx.events}
	if cs.Empty() {
		return
	}
	var meter indexes.QueueMeter
	if box := s.meter.Load(); box != nil {
		meter = box.m
	}
	moves, obs := s.table.Fold(&cs, s.ready, meter != nil)
	if len(moves) > 0 {
		tx.OnDurable(func() { s.ready.ShowCounts(moves) })
	}
	if len(obs) > 0 {
		tx.OnDurable(func() { meter.QueueObserved(obs) })
	}
}

// finish writes the events of the transaction, grouped per tenant under the
// seq of the last one, with one per-node pointer to the group.
func (tx *Tx) finish() error {
	if err := tx.flushAssigned(); err != nil {
		return err
	}
	if len(tx.events) == 0 {
		return nil
	}
	if tenant := tx.events[0].Tenant; allOfTenant(tx.events, tenant) {
		return tx.writeEventGroup(tenant, tx.events)
	}
	groups := map[string][]records.Event{}
	var order []string
	for _, ev := range tx.events {
		if _, ok := groups[ev.Tenant]; !ok {
			order = append(order, ev.Tenant)
		}
		groups[ev.Tenant] = append(groups[ev.Tenant], ev)
	}
	for _, tenant := range order {
		if err := tx.writeEventGroup(tenant, groups[tenant]); err != nil {
			return err
		}
	}
	return nil
}

// allOfTenant reports whether every event is of tenant (the usual case:
// a transaction acts for one tenant).
func allOfTenant(evs []records.Event, tenant string) bool {
	for _, ev := range evs {
		if ev.Tenant != tenant {
			return false
		}
	}
	return true
}

// smallGroup is how many events a group may hold before writeEventGroup
// finds the nodes already indexed with a set rather than a scan.
const smallGroup = 16

// maxEventGroupBytes bounds one event group's record: a transaction's
// events of one tenant that encode larger (a cancel of thousands of nodes)
// are written as consecutive groups, each under its own last seq. Well below
// what either engine takes for one value (Badger's 1 MiB, etcd's request
// size).
const maxEventGroupBytes = 512 << 10

// writeEventGroup writes the events of one tenant as one group under the
// seq of its last event (halves of it, again and again, while it encodes
// larger than maxEventGroupBytes), and the group's pointer for each node
// once: in the node's record when this transaction wrote it, else as a key.
func (tx *Tx) writeEventGroup(tenant string, evs []records.Event) error {
	last := evs[len(evs)-1].Seq
	b, err := (&records.EventGroup{Events: evs}).MarshalMsg(nil)
	if err != nil {
		return fmt.Errorf("error encoding events: %w", err)
	}
	if len(b) > maxEventGroupBytes && len(evs) > 1 {
		half := len(evs) / 2
		if err := tx.writeEventGroup(tenant, evs[:half]); err != nil {
			return err
		}
		return tx.writeEventGroup(tenant, evs[half:])
	}
	if err := tx.kv.Set(tx.scratchKey(records.TagEvent, tenant).U64(last).Bytes(), b); err != nil {
		return err
	}
	var seen map[string]bool
	if len(evs) > smallGroup {
		seen = map[string]bool{}
	}
	for i, ev := range evs {
		if ev.NodeID == "" {
			continue
		}
		if seen != nil {
			if seen[ev.NodeID] {
				continue
			}
			seen[ev.NodeID] = true
		} else if slices.ContainsFunc(evs[:i], func(e records.Event) bool { return e.NodeID == ev.NodeID }) {
			continue
		}
		if ok, err := tx.pointFromRecord(tenant, ev.NodeID, last); err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		if err := tx.kv.Set(tx.scratchKey(records.TagNodeEvent, tenant).Str(ev.NodeID).U64(last).Bytes(), nil); err != nil {
			return err
		}
	}
	return nil
}

// pointFromRecord adds the group seq to the pointers at the end of the node's
// record (node_events.go) when this transaction wrote the record and it has
// room, and reports whether it did; otherwise the pointer is a key of its own.
func (tx *Tx) pointFromRecord(tenant, id string, seq uint64) (bool, error) {
	kb := tx.scratchKey(records.TagNode, tenant)
	key := kb.Last(id)
	kb.Keep(key)
	if !tx.kv.Wrote(key) {
		return false, nil
	}
	record, ok, err := tx.kv.Get(key)
	if err != nil || !ok {
		return false, err
	}
	var horizon uint64 // pointers behind it go only to make room
	if _, seqs := recordPointers(record); len(seqs)/8 >= maxRecordPointers {
		horizon = tx.mark(tenant).horizon
	}
	if record, ok = withRecordPointer(record, seq, horizon); !ok {
		return false, nil
	}
	tx.forgetRead()
	if err := tx.kv.Set(key, record); err != nil {
		return false, err
	}
	if st := tx.nodes[indexes.NodeRef{Tenant: tenant, ID: id}]; st != nil && st.Record != nil {
		st.Record = &record // what NodeGet and the next putNode read
	}
	return true, nil
}

// flushAssigned rewrites the record of each node whose assigned edge changed
// after the transaction last wrote it.
func (tx *Tx) flushAssigned() error {
	for ref, ac := range tx.assigned {
		if ac.written {
			continue // written with it
		}
		a := ac.rec
		st := tx.state(ref)
		if st == nil {
			continue // deleted
		}
		n, err := tx.NodeGet(ref.Tenant, ref.ID)
		if err != nil {
			return err
		}
		if sameAssigned(n.Assigned, a) {
			continue
		}
		if err := tx.NodePutQuiet(n); err != nil {
			return err
		}
	}
	return nil
}

func sameAssigned(a, b *records.LiveEdgeRecord) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Seq == b.Seq && a.Edge.To == b.Edge.To
}

// encode and decode are the store's codec (records_gen.go).
func encode(v msgp.Marshaler) ([]byte, error) { return v.MarshalMsg(nil) }

func decode(b []byte, v msgp.Unmarshaler, what []byte) error {
	if _, err := v.UnmarshalMsg(b); err != nil {
		return fmt.Errorf("error decoding %q: %w", what, err)
	}
	return nil
}

func (tx *Tx) getRecord(key []byte, v msgp.Unmarshaler) (bool, error) {
	b, ok, err := tx.kv.Get(key)
	if err != nil || !ok {
		return ok, err
	}
	return true, decode(b, v, key)
}

// scratchKey starts a key in the writer's reusable builder, for a key only
// handed to kv Set or Delete (which copy it) in a write transaction; the
// key is valid until the next scratchKey.
func (tx *Tx) scratchKey(tag byte, tenant string) *records.KeyBuilder {
	return tx.store.keyScratch.Reset(tag, tenant)
}

func (tx *Tx) setRecord(key []byte, v msgp.Marshaler) error {
	b, err := encode(v)
	if err != nil {
		return err
	}
	return tx.kv.Set(key, b)
}
