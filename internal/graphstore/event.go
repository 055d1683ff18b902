package graphstore

import (
	"context"
	"errors"
	"sync"

	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/records"
)

// nextSeq reserves the next event sequence number of tenant. Only write
// transactions (on the writer goroutine) call it, so numbers are handed out in
// commit order.
func (tx *Tx) nextSeq(tenant string) (uint64, error) {
	if !tx.writable {
		return 0, errReadOnly
	}
	if tx.seqs == nil {
		tx.seqs = map[string]uint64{}
	}
	last, ok := tx.seqs[tenant]
	if !ok {
		last, ok = tx.store.seqs[tenant]
	}
	if !ok {
		var err error
		last, err = tx.lastSeq(tenant)
		if err != nil {
			return 0, err
		}
		// Retention may have removed every group: never reuse its seqs.
		last = max(last, tx.mark(tenant).horizon)
	}
	last++
	tx.seqs[tenant] = last
	return last, nil
}

// lastSeq reads the highest event seq stored for tenant (0 if none): the key
// of its last event group.
func (tx *Tx) lastSeq(tenant string) (uint64, error) {
	var last uint64
	err := tx.kv.Scan(records.NewKey(records.TagEvent, tenant).Bytes(), nil, true, false, func(key, _ []byte) (bool, error) {
		last = records.Uint64FromBytes(key[len(key)-8:])
		return false, nil
	})
	return last, err
}

// Emit appends an event of tenant about node id, with data as its data (nil:
// none). data becomes the event's: the caller does not change it afterwards.
func (tx *Tx) Emit(tenant string, typ records.EventType, id, by string, data map[string]any) error {
	return tx.EmitData(tenant, typ, id, by, records.DataOf(data))
}

// EmitData is Emit with data built by Data (or given to DataOf).
func (tx *Tx) EmitData(tenant string, typ records.EventType, id, by string, data records.EventData) error {
	seq, err := tx.nextSeq(tenant)
	if err != nil {
		return err
	}
	return tx.emitWithSeq(tenant, seq, typ, id, by, data)
}

// emitWithSeq appends an event under a seq already reserved; the events of
// a transaction are written together when it ends (Tx.finish).
func (tx *Tx) emitWithSeq(tenant string, seq uint64, typ records.EventType, id, by string, data records.EventData) error {
	tx.events = append(tx.events, records.Event{Tenant: tenant, Seq: seq, At: tx.now.UTC(), Type: typ, NodeID: id, By: by, Data: data})
	return nil
}

// eventGroupAt reads the event group stored under key.
func (tx *Tx) eventGroupAt(key, val []byte) ([]records.Event, error) {
	var g records.EventGroup
	if err := decode(val, &g, key); err != nil {
		return nil, err
	}
	return g.Events, nil
}

// EventsAfter returns up to limit events of tenant with seq > after, oldest first.
func (tx *Tx) EventsAfter(tenant string, after uint64, limit int) ([]records.Event, error) {
	var out []records.Event
	var start []byte
	if after > 0 {
		start = records.EventKey(tenant, after)
	}
	err := tx.kv.Scan(records.NewKey(records.TagEvent, tenant).Bytes(), start, false, true, func(key, val []byte) (bool, error) {
		evs, err := tx.eventGroupAt(key, val)
		if err != nil {
			return false, err
		}
		var more bool
		out, more = takeEvents(out, evs, tenant, "", after, limit)
		return more, nil
	})
	return out, err
}

// takeEvents appends to out the events of a group with seq > after (and of
// node id, when id is set), up to limit in all; more is false once out is
// full.
func takeEvents(out, evs []records.Event, tenant, id string, after uint64, limit int) (_ []records.Event, more bool) {
	for _, ev := range evs {
		if ev.Seq <= after || (id != "" && ev.NodeID != id) {
			continue
		}
		ev.Tenant = tenant
		out = append(out, ev)
		if len(out) == limit {
			return out, false
		}
	}
	return out, true
}

// NodeEvents returns up to limit events of node id with seq > after, oldest
// first: the groups its record points at and those its pointer keys name,
// merged in seq order (node_events.go).
func (tx *Tx) NodeEvents(tenant, id string, after uint64, limit int) ([]records.Event, error) {
	var st *indexes.NodeState
	if tx.writable {
		st = tx.state(indexes.NodeRef{Tenant: tenant, ID: id})
	}
	record, err := tx.storedRecord(tenant, id, st)
	if err != nil {
		return nil, err
	}
	var inRecord []uint64
	eachRecordPointer(record, func(seq uint64) {
		if seq >= after {
			inRecord = append(inRecord, seq)
		}
	})
	var out []records.Event
	more := true
	take := func(seq uint64) error {
		gk := records.EventKey(tenant, seq)
		val, ok, err := tx.kv.Get(gk)
		if err != nil || !ok {
			return err // a group retention removed: nothing of it is left
		}
		evs, err := tx.eventGroupAt(gk, val)
		if err != nil {
			return err
		}
		out, more = takeEvents(out, evs, tenant, id, after, limit)
		return nil
	}
	prefix := records.NewKey(records.TagNodeEvent, tenant).Str(id).Bytes()
	var start []byte
	if after > 0 {
		start = records.NodeEventKey(tenant, id, after)
	}
	err = tx.kv.Scan(prefix, start, false, false, func(key, _ []byte) (bool, error) {
		seq := records.Uint64FromBytes(key[len(key)-8:])
		for ; more && len(inRecord) > 0 && inRecord[0] <= seq; inRecord = inRecord[1:] {
			if inRecord[0] == seq {
				continue // named twice: taken once, below
			}
			if err := take(inRecord[0]); err != nil {
				return false, err
			}
		}
		if more {
			if err := take(seq); err != nil {
				return false, err
			}
		}
		return more, nil
	})
	for ; err == nil && more && len(inRecord) > 0; inRecord = inRecord[1:] {
		err = take(inRecord[0])
	}
	return out, err
}

// eventHub wakes long-polling readers when a tenant's events commit.
type eventHub struct {
	mu      sync.Mutex
	waiters map[string]chan struct{}
}

func newEventHub() *eventHub { return &eventHub{waiters: map[string]chan struct{}{}} }

func (h *eventHub) publish(evs []records.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range evs {
		if ch, ok := h.waiters[ev.Tenant]; ok {
			close(ch)
			delete(h.waiters, ev.Tenant)
		}
	}
}

// changed returns a channel closed at the next commit of an event of tenant.
func (h *eventHub) changed(tenant string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.waiters[tenant]
	if !ok {
		ch = make(chan struct{})
		h.waiters[tenant] = ch
	}
	return ch
}

// WaitEvents blocks until tenant has an event with seq > after or ctx ends,
// and returns up to limit such events (none when ctx ended first).
func (s *Store) WaitEvents(ctx context.Context, tenant string, after uint64, limit int) ([]records.Event, error) {
	for {
		ch := s.events.changed(tenant)
		var evs []records.Event
		err := s.View(func(tx *Tx) error {
			var err error
			evs, err = tx.EventsAfter(tenant, after, limit)
			return err
		})
		if err != nil || len(evs) > 0 {
			return evs, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, nil
			}
			return nil, ctx.Err()
		}
	}
}
