package message

import "github.com/tether-run/tether/internal/graphstore"

// Messages to a node that is gone. A node that is deleted, or removed by
// retention, can have no holder again, so a message to it that nobody read
// could never be read: it expires at the removal, in the same transaction,
// and leaves the index and the store like any expired message (Retention
// later). Without this, an unread message without ttl to a removed node
// stayed in the store and the index forever.

// nodeGone is the graph's NodeGoneHook: it expires every unread message to
// node id of tenant.
func (s *Service) nodeGone(tx *graphstore.Tx, tenant, id string) error {
	key := nodeBox(tenant, id)
	s.ix.mu.Lock()
	ids := s.ix.unreadIDs(key)
	s.ix.mu.Unlock()
	return s.expireUnread(tx, tenant, ids)
}

// expireUnread expires, at tx's instant, each message of ids that is
// neither read nor expired yet (each is read again in tx, so a read or an
// expiry not yet durable counts).
func (s *Service) expireUnread(tx *graphstore.Tx, tenant string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	now := tx.Now().UTC()
	var gone []placed
	for _, id := range ids {
		var r Record
		found, err := tx.Records().MessageGet(tenant, id, &r)
		if err != nil {
			return err
		}
		if !found || r.ReadAt != nil || r.expired(now) {
			continue
		}
		r.ExpiresAt = &now
		if err := tx.Records().MessagePut(tenant, r.ID, &r, r.keepFor(now)); err != nil {
			return err
		}
		gone = append(gone, placedOf(tenant, &r))
	}
	if len(gone) == 0 {
		return nil
	}
	tx.OnDurable(func() {
		s.ix.mu.Lock()
		for _, p := range gone {
			// Placed again, unread, to leave at now: the sweep drops it
			// as expired.
			s.ix.add(p, false, now)
		}
		s.ix.mu.Unlock()
		s.arm(now)
	})
	return nil
}

// unreadIDs are the ids of recipient k's unread messages, those durable and
// those committed but not yet durable. Call with mu held.
func (ix *index) unreadIDs(k boxKey) []string {
	var ids []string
	if b, ok := ix.boxes[k]; ok {
		b.unread.Ascend(func(e entry) bool {
			ids = append(ids, e.id)
			return true
		})
	}
	for id := range ix.sending[k] {
		ids = append(ids, id)
	}
	return ids
}

// sendingAdd notes a message to a node whose send committed but is not yet
// durable (so not in the index yet); sendingDone forgets it once it is.
// Call with mu held.
func (ix *index) sendingAdd(k boxKey, id string) {
	if ix.sending == nil {
		ix.sending = map[boxKey]map[string]struct{}{}
	}
	m, ok := ix.sending[k]
	if !ok {
		m = map[string]struct{}{}
		ix.sending[k] = m
	}
	m[id] = struct{}{}
}

func (ix *index) sendingDone(k boxKey, id string) {
	if m, ok := ix.sending[k]; ok {
		delete(m, id)
		if len(m) == 0 {
			delete(ix.sending, k)
		}
	}
}
