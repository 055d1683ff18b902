package kv

import (
	"slices"
	"time"
)

// durable commits a group to PostgreSQL: its segments, merged (the newest
// write of a key winning), as one transaction (several, in order, only when
// the group is larger than postgresTxnBytes), each sent in one round trip:
//
//	BEGIN; [guard FOR SHARE;] upsert (unnest); delete (= ANY); COMMIT
//
// as one pipeline with one Sync: an error in any statement skips the rest,
// COMMIT included, and the transaction is rolled back. Each segment is
// marked done once committed: durable and applied at once.
//
// A commit whose outcome is unknown (the connection lost, or the timeout
// passed, after the batch was sent) is never tried again: the transaction
// either committed whole or not at all, and trying it again after other
// writes could put it in another order. The store breaks; its callers are
// answered unavailable; whoever opens the shard next reads what PostgreSQL
// holds. Only a transaction that certainly did not run is sent again, on
// another connection (commitParts): one whose send failed before any byte left
// (pgconn.SafeToRetry), or whose BEGIN was answered by an error from the
// server (a connection the server had ended while the pool held it idle
// answers FATAL in its place; the server runs nothing after it).
func (e *postgresEngine) durable(group []*inflight) error {
	start := time.Now()
	var keys, bytes int64
	for i := 0; i < len(group); {
		merged := group[i].over
		j := i + 1
		n, size := merged.len(), merged.size
		for ; j < len(group) && n+group[j].over.len() <= postgresTxnKeys && size+group[j].over.size <= postgresTxnBytes; j++ {
			if merged == group[i].over {
				merged = newOverlay()
				merged.absorb(group[i].over)
			}
			merged.absorb(group[j].over)
			n, size = n+group[j].over.len(), size+group[j].over.size
		}
		if merged.len() > 0 {
			if err := e.commit(merged); err != nil {
				return err
			}
			e.s.stats.Batches.Add(1)
			keys += int64(merged.len())
			bytes += merged.bytes()
		}
		for _, f := range group[i:j] {
			f.done.Store(true)
		}
		i = j
	}
	st := &e.s.stats
	st.Syncs.Add(1)
	st.SyncNanos.Add(time.Since(start).Nanoseconds())
	st.Keys.Add(keys)
	st.Bytes.Add(bytes)
	return nil
}

// apply has nothing to do: durable applied every segment.
func (e *postgresEngine) apply([]*inflight) error { return nil }

// commit sends o as one guarded transaction in one round trip, on its own
// or, with a Batcher, as one part of the batcher's transaction.
func (e *postgresEngine) commit(o *overlay) error {
	p := e.part(o)
	var held bool
	var err error
	if e.batcher != nil {
		held, err = e.batcher.commit(p)
	} else {
		var res []bool
		res, err = commitParts(e.pool, e.timeout, e.log, []*postgresPart{p}, func() { e.sends.Add(1) })
		if err == nil {
			held = res[0]
		}
	}
	if err != nil {
		return err
	}
	if !held {
		return e.deposedNow()
	}
	return nil
}

// part is o's share of a transaction: keys in byte order (rows are locked
// in one order by every write).
func (e *postgresEngine) part(o *overlay) *postgresPart {
	ks := make([]string, 0, o.len())
	for k := range o.vals {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	p := &postgresPart{sql: &e.sql, shard: e.shard, guard: e.guard, size: o.bytes()}
	for _, k := range ks {
		v := o.vals[k]
		if v.deleted {
			p.dels = append(p.dels, []byte(k))
			continue
		}
		p.setK = append(p.setK, []byte(k))
		// A nil value would be sent as NULL.
		p.setV = append(p.setV, append(make([]byte, 0, len(v.val)), v.val...))
		p.setE = append(p.setE, int64(v.expiresAt))
	}
	return p
}
