package kv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// postgresPart is one store's writes within a transaction: its guard, its
// upserts and its deletes. Every write of a guarded part is conditioned on
// the guard's row, so a part whose guard finds no row writes nothing while
// the other parts of its transaction commit.
type postgresPart struct {
	sql   *postgresSQL
	shard int
	guard *PostgresGuard // nil: unguarded
	setK  [][]byte
	setV  [][]byte
	setE  []int64
	dels  [][]byte
	size  int64 // the bytes of its keys and values
}

// keys is how many keys the part writes.
func (p *postgresPart) keys() int { return len(p.setK) + len(p.dels) }

// queue adds the part's statements to b.
func (p *postgresPart) queue(b *pgx.Batch) {
	if p.guard != nil {
		b.Queue(p.sql.guard, p.shard, p.guard.Owner, p.guard.Epoch)
	}
	if len(p.setK) > 0 {
		args := []any{p.shard, p.setK, p.setV, p.setE}
		if p.guard != nil {
			args = append(args, p.guard.Owner, p.guard.Epoch)
		}
		b.Queue(p.sql.upsert, args...)
	}
	if len(p.dels) > 0 {
		args := []any{p.shard, p.dels}
		if p.guard != nil {
			args = append(args, p.guard.Owner, p.guard.Epoch)
		}
		b.Queue(p.sql.delete, args...)
	}
}

// read reads the results of the part's statements: held is whether its
// guard found its row (always, unguarded).
func (p *postgresPart) read(br pgx.BatchResults) (held bool, err error) {
	held = true
	if p.guard != nil {
		rows, err := br.Query()
		if err != nil {
			return false, fmt.Errorf("error committing (the guard of shard %d): %w", p.shard, err)
		}
		held = rows.Next()
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, fmt.Errorf("error committing (the guard of shard %d): %w", p.shard, err)
		}
	}
	if len(p.setK) > 0 {
		if _, err := br.Exec(); err != nil {
			return false, fmt.Errorf("error committing (the upsert of shard %d): %w", p.shard, err)
		}
	}
	if len(p.dels) > 0 {
		if _, err := br.Exec(); err != nil {
			return false, fmt.Errorf("error committing (the delete of shard %d): %w", p.shard, err)
		}
	}
	return held, nil
}

// errNotRun marks a commit the server refused at its BEGIN: nothing of it
// ran.
var errNotRun = errors.New("the transaction did not begin")

// commitParts commits parts as one transaction in one round trip:
//
//	BEGIN; part 1; part 2; ...; COMMIT
//
// as one pipeline with one Sync: an error in any statement skips the rest,
// COMMIT included, and the transaction is rolled back whole. held[i] is
// whether part i's guard held (a part whose guard did not wrote nothing).
//
// Every idle connection of the pool may have died at once (the server
// restarted), and each attempt on a dead one closes it: so a transaction
// that certainly did not run (its send failed before any byte left, or
// the server refused its BEGIN) is sent again, up to one more time than the
// pool has connections. One whose outcome is unknown is never sent again.
// sent runs before each send (counting round trips).
func commitParts(pool *pgxpool.Pool, timeout time.Duration, log *slog.Logger, parts []*postgresPart, sent func()) ([]bool, error) {
	attempts := int(pool.Config().MaxConns) + 1
	for attempt := 1; ; attempt++ {
		held, err := sendParts(pool, timeout, parts, sent)
		if err == nil || attempt == attempts || !(pgconn.SafeToRetry(err) || errors.Is(err, errNotRun)) {
			return held, err
		}
		log.Info("sending a commit again on another connection: it did not run", "parts", len(parts), "err", err)
	}
}

// sendParts sends the transaction once on a connection of the pool and
// reads every result.
func sendParts(pool *pgxpool.Pool, timeout time.Duration, parts []*postgresPart, sent func()) ([]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("error taking a connection for a commit: %w", err)
	}
	// A connection left inside a transaction (an error skipped the
	// COMMIT) is closed by the pool on release, not reused.
	defer conn.Release()
	b := &pgx.Batch{} // a batch is sent once: built for each attempt
	b.Queue("BEGIN")
	for _, p := range parts {
		p.queue(b)
	}
	b.Queue("COMMIT")
	if sent != nil {
		sent()
	}
	br := conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return nil, fmt.Errorf("error committing: %w: %w", errNotRun, err)
		}
		return nil, fmt.Errorf("error committing: %w", err)
	}
	held := make([]bool, len(parts))
	for i, p := range parts {
		if held[i], err = p.read(br); err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, fmt.Errorf("error committing (COMMIT): %w", err)
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("error committing: %w", err)
	}
	return held, nil
}
