package graphstore

// The store's doors to the derived state (package indexes): what callers ask
// of the ready mirror, the queue counts and the list indexes.

import (
	"fmt"
	"time"

	"github.com/tether-run/tether/internal/kv"

	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/records"
)

// QueueCount returns how many nodes of the queue are in status st, as of the
// last commit. Inside Update it is the count every earlier transaction left.
func (tx *Tx) QueueCount(tenant, queue string, st records.Status) int64 {
	return tx.store.QueueCount(tenant, queue, st)
}

// QueueCount returns how many nodes of the queue are in status st, as of the
// last commit.
func (s *Store) QueueCount(tenant, queue string, st records.Status) int64 {
	return s.ready.QueueCount(tenant, queue, st)
}

// ReadyIDs calls fn with the ids in tenant's queue that f's claimer may take
// at now, in claim order (priority high first, then oldest, then id), until
// fn returns false. It reads the in-memory mirror of the ready index, whose
// entries carry type, labels and target, so the ids are those that match f as
// of the node's last write; it never calls fn under the mirror's lock. Call
// it on the writer (inside Update) so the mirror matches what the
// transaction sees.
func (tx *Tx) ReadyIDs(tenant, queue string, f indexes.ReadyFilter, fn func(id string) bool) {
	tx.store.ready.AscendFiltered(tenant, queue, tx.now, f, fn)
}

// ReadyStats returns how many nodes of the queue are claimable now and when
// the oldest of them was created.
func (s *Store) ReadyStats(tenant, queue string) (int, time.Time) {
	return s.ready.Stats(tenant, queue)
}

// ReadyWatch files a long-polling claimer of the queue: changed is closed
// the next time a node that f lets it take becomes claimable, or when Kick is
// called for the queue. Call it before looking, so that a node turning ready
// between the look and the wait is not missed, and call stop once done
// waiting (it may be called more than once).
func (s *Store) ReadyWatch(tenant, queue string, f indexes.ReadyFilter) (changed <-chan struct{}, stop func()) {
	return s.ready.Watch(tenant, queue, f)
}

// ReadyWaiters returns how many claimers are waiting on the queue and how
// many waits it has ended so far (by a matching node or by Kick), so tests
// and metrics can see who was woken without waiting for a timeout.
func (s *Store) ReadyWaiters(tenant, queue string) (waiting int, woken int64) {
	return s.ready.WaitStats(tenant, queue)
}

// Kick wakes the claimers waiting on a queue (it was resumed, or a running
// slot freed up).
func (s *Store) Kick(tenant, queue string) { s.ready.Notify(tenant, queue) }

// EachQueueStat calls fn with every queue of every tenant that holds nodes:
// its node counts by status (as durable; fn must not keep or change the
// map), how many of them are claimable now and when the oldest of those was
// created (zero when none). It walks the queues the ready mirror holds, not
// the nodes, under the mirror's lock: fn must be quick and must not call the
// store.
func (s *Store) EachQueueStat(fn func(tenant, queue string, counts map[records.Status]int64, ready int, oldestReady time.Time)) {
	s.ready.EachQueueStat(fn)
}

// QueueStats lists the queues of tenant that hold nodes, by name.
func (s *Store) QueueStats(tenant string) []indexes.QueueStat { return s.ready.QueueStats(tenant) }

// HeldNodeIDs returns the ids of the nodes of tenant whose lease names
// holder, in id order, as of the last commit: O(log n + held). A lease past
// its expiry counts until the reaper ends it, so a caller that must know
// whether holder holds a node now reads its record.
func (tx *Tx) HeldNodeIDs(tenant, holder string) []string {
	return tx.store.table.HeldNodeIDs(tenant, holder)
}

// rebuild derives the in-memory state from the records: every node's state
// (and its record while live), the live edges (assigned ones from their
// nodes' records) with the blocker and dependent counts they imply, the
// fences of deleted nodes, the blobs with the references the nodes make, the
// ready mirror with its queue counts, the finished nodes in the order
// retention takes them, and the retention marks. It runs once at open,
// before the writer.
func (s *Store) rebuild() error {
	if err := s.derive(s.table, s.ready, s.blobs); err != nil {
		return err
	}
	s.table.FillFinished()
	return s.loadMarks()
}

// loadMarks reads every tenant's retention mark (retention.go).
func (s *Store) loadMarks() error {
	return s.kv.View(func(ktx *kv.Txn) error {
		return ktx.Scan([]byte{records.TagRetention, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
			parts := records.SplitKey(key, 2) // tenant, ""
			m, err := decodeMark(val)
			if len(parts) != 2 || err != nil {
				return false, fmt.Errorf("retention mark %q is malformed: %v", key, err)
			}
			tenant := string(parts[0])
			s.marks.writer[tenant], s.marks.horizon[tenant] = m, m.horizon
			return true, nil
		})
	})
}

// derive builds the in-memory state from the records into t, m and b, all
// empty, from one snapshot: the derived state (indexes.Derive)
// with the blocker counts the model's rule gives (countBlocks), and the
// blob state with the references the node records make.
func (s *Store) derive(t *indexes.Table, m *indexes.ReadyMirror, b *blobTable) error {
	blobRefs := map[blobRef]int64{}
	onNode := func(ref indexes.NodeRef, n *records.Node) {
		for _, sha := range n.Blobs {
			blobRefs[blobRef{ref.Tenant, sha}]++
		}
		s.flow.countNode(ref.Tenant, n, indexes.HoldsSlots(n))
	}
	return s.kv.View(func(ktx *kv.Txn) error {
		if err := indexes.Derive(ktx, t, m, s.liveRecords, onNode, countBlocks); err != nil {
			return err
		}
		if err := s.flow.load(ktx); err != nil {
			return err
		}
		return b.derive(ktx, blobRefs)
	})
}
