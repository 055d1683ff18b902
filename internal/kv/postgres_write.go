package kv

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
// another connection (commit): one whose send failed before any byte left
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

// commit sends o as one guarded transaction in one round trip.
// Every idle connection of the pool may have died at once (the server
// restarted), and each attempt on a dead one closes it: so a commit is sent
// up to one more time than the pool has connections.
func (e *postgresEngine) commit(o *overlay) error {
	attempts := int(e.pool.Config().MaxConns) + 1
	for attempt := 1; ; attempt++ {
		err := e.send(e.batch(o)) // a batch is sent once: built for each attempt
		if err == nil || attempt == attempts || !(pgconn.SafeToRetry(err) || errors.Is(err, errNotRun)) {
			return err
		}
		e.log.Info("sending a commit again on another connection: it did not run", "shard", e.shard, "err", err)
	}
}

// errNotRun marks a commit the server refused at its BEGIN: nothing of it
// ran.
var errNotRun = errors.New("the transaction did not begin")

// batch is o's transaction: keys in byte order (rows are locked in one
// order by every write).
func (e *postgresEngine) batch(o *overlay) *pgx.Batch {
	ks := make([]string, 0, o.len())
	for k := range o.vals {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var setK, setV, dels [][]byte
	var setE []int64
	for _, k := range ks {
		v := o.vals[k]
		if v.deleted {
			dels = append(dels, []byte(k))
			continue
		}
		setK = append(setK, []byte(k))
		// A nil value would be sent as NULL.
		setV = append(setV, append(make([]byte, 0, len(v.val)), v.val...))
		setE = append(setE, int64(v.expiresAt))
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	if e.guard != nil {
		b.Queue(e.sql.guard, e.guardArgs()...)
	}
	if len(setK) > 0 {
		args := []any{e.shard, setK, setV, setE}
		if e.guard != nil {
			args = append(args, e.guard.Owner, e.guard.Epoch)
		}
		b.Queue(e.sql.upsert, args...)
	}
	if len(dels) > 0 {
		args := []any{e.shard, dels}
		if e.guard != nil {
			args = append(args, e.guard.Owner, e.guard.Epoch)
		}
		b.Queue(e.sql.delete, args...)
	}
	b.Queue("COMMIT")
	return b
}

// send sends b on a connection of the pool and reads every result. A guard
// that found no row is ErrDeposed (its transaction wrote nothing).
func (e *postgresEngine) send(b *pgx.Batch) error {
	ctx, cancel := e.ctx()
	defer cancel()
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("error taking a connection for a commit: %w", err)
	}
	// A connection left inside a transaction (an error skipped the
	// COMMIT) is closed by the pool on release, not reused.
	defer conn.Release()
	e.sends.Add(1)
	br := conn.SendBatch(ctx, b)
	held := true
	for i, q := range b.QueuedQueries {
		if e.guard != nil && i == 1 {
			rows, err := br.Query()
			if err != nil {
				_ = br.Close()
				return fmt.Errorf("error committing: %w", err)
			}
			held = rows.Next()
			rows.Close()
			if err := rows.Err(); err != nil {
				_ = br.Close()
				return fmt.Errorf("error committing: %w", err)
			}
			continue
		}
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			var pgErr *pgconn.PgError
			if i == 0 && errors.As(err, &pgErr) {
				return fmt.Errorf("error committing: %w: %w", errNotRun, err)
			}
			return fmt.Errorf("error committing (%.40s...): %w", q.SQL, err)
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("error committing: %w", err)
	}
	if !held {
		return e.deposedNow()
	}
	return nil
}
