package graphstore

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/records"
)

// Retention removes what a tenant no longer keeps: finished nodes (with their
// comments, retired edges and event pointers) some time after their last
// change, and events some time after they happened. It writes no event: a
// removal is not a change of the work. What it leaves behind:
//
//	X|t   the tenant's retention mark: the highest event seq removed (the
//	      horizon: a reader asking for events after a lower seq would miss
//	      some) and the fence floor (the highest last fence of a removed
//	      node: a node created afterwards starts its fences above it, so a
//	      fence is never handed out twice even under a re-used id).
//
// The finished nodes wait in a per-tenant queue in the order they finished
// (indexes' finished.go, Table.FinishedQueue), rebuilt at open.

// retentionMark is a tenant's X record.
type retentionMark struct {
	horizon    uint64 // highest event seq removed
	fenceFloor uint64 // highest last fence of a removed node
}

func (m retentionMark) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, m.horizon)
	return binary.BigEndian.AppendUint64(b, m.fenceFloor)
}

func decodeMark(b []byte) (retentionMark, error) {
	if len(b) != 16 {
		return retentionMark{}, fmt.Errorf("retention mark of %d bytes", len(b))
	}
	return retentionMark{records.Uint64FromBytes(b[:8]), records.Uint64FromBytes(b[8:])}, nil
}

// marks holds every tenant's retention mark as of the writer's last commit,
// and the horizons readers check.
type marks struct {
	mu      sync.RWMutex
	writer  map[string]retentionMark
	horizon map[string]uint64
}

func newMarks() *marks {
	return &marks{writer: map[string]retentionMark{}, horizon: map[string]uint64{}}
}

// mark returns tenant's mark as this transaction sees it.
func (tx *Tx) mark(tenant string) retentionMark {
	if m, ok := tx.marks[tenant]; ok {
		return m
	}
	tx.store.marks.mu.RLock()
	defer tx.store.marks.mu.RUnlock()
	return tx.store.marks.writer[tenant]
}

func (tx *Tx) setMark(tenant string, m retentionMark) error {
	if tx.marks == nil {
		tx.marks = map[string]retentionMark{}
		// Readers' horizon moves at commit, before the removal can reach
		// them (it does once durable): a reader that checks the horizon
		// after reading knows whether what it read could have a hole.
		tx.OnCommit(func() {
			ms := tx.store.marks
			ms.mu.Lock()
			for t, m := range tx.marks {
				ms.writer[t] = m
				ms.horizon[t] = m.horizon
			}
			ms.mu.Unlock()
		})
	}
	tx.marks[tenant] = m
	return tx.kv.Set(records.RetentionKey(tenant), m.encode())
}

// EventHorizon is the highest event seq of tenant that retention removed (0
// when none): a reader that has seen only events up to a lower seq has
// missed some for good. It moves when a removal commits, before readers can
// see the removal: check it after reading to know a read had no hole.
func (s *Store) EventHorizon(tenant string) uint64 {
	s.marks.mu.RLock()
	defer s.marks.mu.RUnlock()
	return s.marks.horizon[tenant]
}

// Tenants lists every tenant that has nodes, or had some that retention
// removed.
func (s *Store) Tenants() []string {
	out := s.table.ListedTenants()
	s.marks.mu.RLock()
	for t := range s.marks.writer {
		out = append(out, t)
	}
	s.marks.mu.RUnlock()
	slices.Sort(out)
	return slices.Compact(out)
}

// PurgeFinished removes up to batch nodes of tenant that finished (and last
// changed) before cutoff, oldest first, with their comments, retired edges,
// event pointers and live edges. A finished node still linked by a live
// edge to a node that is not finished is kept, and looked at again a
// retention period later. It returns how many it removed and whether more
// are due.
func (tx *Tx) PurgeFinished(tenant string, cutoff time.Time, batch int) (removed int, more bool, err error) {
	if !tx.writable {
		return 0, false, errReadOnly
	}
	q := tx.store.table.FinishedQueue(tenant)
	if q == nil {
		return 0, false, nil
	}
	limit := cutoff.UnixNano()
	mark := tx.mark(tenant)
	var taken int
	var again []indexes.FinishedItem
	for i := q.Head; i < len(q.Items) && removed < batch; i++ {
		it := q.Items[i]
		if it.At >= limit {
			break
		}
		taken++
		ref := indexes.NodeRef{Tenant: tenant, ID: it.ID}
		st := tx.state(ref)
		if st == nil || !st.Status.Terminal() || st.Changed != it.At {
			continue // gone, running again, or changed since: a later item stands for it
		}
		fence, ok, err := tx.purgeNode(ref)
		if err != nil {
			return 0, false, err
		}
		if !ok {
			again = append(again, indexes.FinishedItem{At: tx.now.UnixNano(), ID: it.ID})
			continue
		}
		mark.fenceFloor = max(mark.fenceFloor, fence)
		removed++
	}
	more = q.Head+taken < len(q.Items) && q.Items[q.Head+taken].At < limit
	if removed > 0 {
		if err := tx.setMark(tenant, mark); err != nil {
			return 0, false, err
		}
	}
	tx.OnCommit(func() {
		q.Head += taken
		q.Items = append(q.Items, again...)
		q.Compact()
	})
	return removed, more, nil
}

// purgeNode removes a finished node and everything that hangs off it; false
// when a live edge links it to a node that is not finished. It returns the
// node's last fence.
func (tx *Tx) purgeNode(ref indexes.NodeRef) (uint64, bool, error) {
	tenant, id := ref.Tenant, ref.ID
	var live []*indexes.LiveEdge
	for _, dir := range []Direction{DirOut, DirIn} {
		for _, le := range tx.liveEdges(tenant, id, "", dir) {
			other := le.Edge.To
			if dir == DirIn {
				other = le.Edge.From
			}
			if st := tx.state(indexes.NodeRef{Tenant: tenant, ID: other}); st != nil && !st.Status.Terminal() {
				return 0, false, nil
			}
			live = append(live, le)
		}
	}
	n, err := tx.NodeGet(tenant, id)
	if err != nil {
		return 0, false, err
	}
	for _, le := range live {
		if err := tx.edgeDrop(tenant, le.Edge); err != nil {
			return 0, false, err
		}
	}
	if err := tx.blobRefs(tenant, n.Blobs, nil); err != nil {
		return 0, false, err
	}
	tx.forgetRead()
	if err := tx.kv.Delete(records.NodeKey(tenant, id)); err != nil {
		return 0, false, err
	}
	tx.setState(ref, nil)
	if err := tx.nodeGone(tenant, id); err != nil {
		return 0, false, err
	}
	// Comments and event pointers: every key under the node's prefixes.
	for _, tag := range []byte{records.TagComment, records.TagNodeEvent} {
		if err := tx.deleteUnder(records.NewKey(tag, tenant).Str(id).Bytes(), nil); err != nil {
			return 0, false, err
		}
	}
	// Retired edges, each with its other side.
	err = tx.deleteUnder(records.NewKey(records.TagRetiredOut, tenant).Str(id).Bytes(), func(key []byte) []byte {
		p := records.SplitKey(key, 5) // tenant, from, type, to, seq
		if len(p) != 5 || len(p[4]) != 8 {
			return nil
		}
		return records.RetiredEdgeKey(records.TagRetiredIn, tenant, string(p[3]), string(p[2]), id, records.Uint64FromBytes(p[4]))
	})
	if err != nil {
		return 0, false, err
	}
	err = tx.deleteUnder(records.NewKey(records.TagRetiredIn, tenant).Str(id).Bytes(), func(key []byte) []byte {
		p := records.SplitKey(key, 5) // tenant, to, type, from, seq
		if len(p) != 5 || len(p[4]) != 8 {
			return nil
		}
		return records.RetiredEdgeKey(records.TagRetiredOut, tenant, string(p[3]), string(p[2]), id, records.Uint64FromBytes(p[4]))
	})
	return n.LastFence, err == nil, err
}

// deleteUnder deletes every key under prefix and, for each, the key pair
// returns (when not nil).
func (tx *Tx) deleteUnder(prefix []byte, pair func(key []byte) []byte) error {
	var keys [][]byte
	err := tx.kv.Scan(prefix, nil, false, false, func(key, _ []byte) (bool, error) {
		keys = append(keys, key)
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.kv.Delete(k); err != nil {
			return err
		}
		if pair != nil {
			if p := pair(k); p != nil {
				if err := tx.kv.Delete(p); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// edgeDrop removes a live edge with no history and no event (retention),
// keeping the counts it implied right.
func (tx *Tx) edgeDrop(tenant string, e *records.Edge) error {
	if dDeps, dChildren := tx.edgeBlocks(tenant, e); dDeps != 0 || dChildren != 0 {
		tx.addBlockers(tenant, e.From, -dDeps, -dChildren)
	}
	if e.Type == EdgeDependsOn {
		if st := tx.mut(indexes.NodeRef{Tenant: tenant, ID: e.To}); st != nil {
			st.Dependents = max(0, st.Dependents-1)
		}
	}
	if err := tx.storeLiveEdge(tenant, &records.LiveEdgeRecord{Edge: records.Edge{From: e.From, Type: e.Type, To: e.To}}); err != nil {
		return err
	}
	tx.setEdge(indexes.EdgeRef{Tenant: tenant, From: e.From, Type: e.Type, To: e.To}, nil)
	return nil
}

// PurgeEvents removes up to batch of tenant's oldest event groups whose
// events all happened before cutoff, with their per-node pointers, and
// moves the tenant's horizon to the last seq removed. It returns how many
// groups it removed and whether more are due.
func (tx *Tx) PurgeEvents(tenant string, cutoff time.Time, batch int) (removed int, more bool, err error) {
	if !tx.writable {
		return 0, false, errReadOnly
	}
	mark := tx.mark(tenant)
	var keys [][]byte
	var groups [][]records.Event
	err = tx.kv.Scan(records.NewKey(records.TagEvent, tenant).Bytes(), nil, false, true, func(key, val []byte) (bool, error) {
		evs, err := tx.eventGroupAt(key, val)
		if err != nil {
			return false, err
		}
		if len(evs) > 0 && !evs[len(evs)-1].At.Before(cutoff) {
			return false, nil
		}
		if len(keys) == batch {
			more = true
			return false, nil
		}
		keys, groups = append(keys, key), append(groups, evs)
		return true, nil
	})
	if err != nil || len(keys) == 0 {
		return 0, false, err
	}
	for i, key := range keys {
		seq := records.Uint64FromBytes(key[len(key)-8:])
		if err := tx.kv.Delete(key); err != nil {
			return 0, false, err
		}
		seen := map[string]bool{}
		for _, ev := range groups[i] {
			if ev.NodeID == "" || seen[ev.NodeID] {
				continue
			}
			seen[ev.NodeID] = true
			if err := tx.kv.Delete(records.NodeEventKey(tenant, ev.NodeID, seq)); err != nil {
				return 0, false, err
			}
		}
		mark.horizon = max(mark.horizon, seq)
	}
	return len(keys), more, tx.setMark(tenant, mark)
}
