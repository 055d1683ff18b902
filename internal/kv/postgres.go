package kv

// Engine 3: PostgreSQL holds the data. A group of segments is durable once
// PostgreSQL has committed it: one transaction, sent with its guard, its
// upserts and its deletes in one round trip (postgres_write.go).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/pgschema"
)

// PostgresOptions configure a Store whose records live in PostgreSQL, in
// the kv table of Schema (made by pgschema.Migrate).
type PostgresOptions struct {
	// Pool is where every statement goes. A reader in flight (a View or a
	// Snapshot that reads PostgreSQL) holds a connection until it ends, and
	// a commit takes one: size the pool for both.
	Pool   *pgxpool.Pool
	Schema string
	// Shard is the kv table's shard column: every key of this store.
	Shard int
	// Guard fences the shard's writes; nil writes without an ownership
	// check (one owner by construction: tests, a single server).
	Guard *PostgresGuard
	// OnDeposed runs once, on a goroutine of its own, when a write finds
	// the guard false: the store is broken from then on.
	OnDeposed func()
	// Timeout bounds every statement the store sends (default 10 s); a
	// commit that times out breaks the store.
	Timeout time.Duration
	// Batcher, when set, sends this store's commits together with other
	// stores' (postgres_batcher.go); the store must be closed before it.
	Batcher     *PostgresBatcher
	Logger      *slog.Logger
	MaxBatch    int
	KeyInflight int
}

// PostgresGuard fences a shard's writes: every write transaction first runs
//
//	SELECT 1 FROM <schema>.shard_owners WHERE shard=$1 AND owner=$2 AND epoch=$3 FOR SHARE
//
// and writes only if that row is there. A takeover (UPDATE shard_owners SET
// owner=..., epoch=epoch+1) waits for the row lock of every write in
// flight, and no write with the old epoch commits after it.
type PostgresGuard struct {
	Owner string
	Epoch int64
}

// postgresEngine keeps the store in PostgreSQL.
type postgresEngine struct {
	pool      *pgxpool.Pool
	shard     int
	guard     *PostgresGuard
	onDeposed func()
	deposed   sync.Once
	batcher   *PostgresBatcher
	timeout   time.Duration
	sql       postgresSQL
	s         *Store
	log       *slog.Logger

	// cleanEvery is the pause between rounds of the expiry cleaner
	// (postgres_expiry.go).
	cleanEvery time.Duration
	cleaned    chan struct{} // closed when the expiry cleaner has stopped (nil before start)
	// sends counts the round trips of commits (each sends one batch), for
	// tests and benchmarks.
	sends atomic.Int64
}

// Limits of the PostgreSQL engine. A value may hold what Badger takes (so a
// store moves between engines), a closure 64 MiB or 64 Ki keys, and one
// transaction holds whole segments up to postgresTxnBytes (a group larger
// than that commits as several transactions in order: a crash between them
// keeps a prefix of the group, as the log does).
const (
	postgresMaxValue = valueThreshold - 1
	postgresMaxKeys  = 1 << 16
	postgresMaxBytes = 64 << 20
	postgresTxnBytes = 96 << 20
	postgresTxnKeys  = 1 << 17
)

// OpenPostgres opens a Store whose records live in PostgreSQL: the rows of
// Schema's kv table whose shard is Shard. The schema must be migrated
// (pgschema.Migrate); opening reads the table once, so a missing one is an
// error here, and so is a Guard already false (wrapping ErrDeposed; OnDeposed
// does not run for it).
func OpenPostgres(opts PostgresOptions) (*Store, error) {
	if opts.Pool == nil {
		return nil, errors.New("kv.OpenPostgres needs a pool")
	}
	if err := pgschema.ValidSchema(opts.Schema); err != nil {
		return nil, err
	}
	opts.Logger = logger.OrDiscard(opts.Logger)
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	e := &postgresEngine{
		pool:       opts.Pool,
		shard:      opts.Shard,
		guard:      opts.Guard,
		batcher:    opts.Batcher,
		timeout:    opts.Timeout,
		sql:        newPostgresSQL(opts.Schema, opts.Guard != nil),
		log:        opts.Logger,
		cleanEvery: 10 * time.Second,
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	s := newStore(e, opts.Logger, opts.MaxBatch, opts.KeyInflight)
	e.onDeposed = opts.OnDeposed
	return s, nil
}

// check reads the kv table and the guard once.
func (e *postgresEngine) check() error {
	ctx, cancel := e.ctx()
	defer cancel()
	rows, err := e.pool.Query(ctx, e.sql.probe, e.shard)
	if err != nil {
		return fmt.Errorf("error reading the store's table (is the schema migrated? tether migrate): %w", err)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("error reading the store's table (is the schema migrated? tether migrate): %w", err)
	}
	if e.guard == nil {
		return nil
	}
	rows, err = e.pool.Query(ctx, e.sql.guard, e.guardArgs()...)
	if err != nil {
		return fmt.Errorf("error reading the store's guard: %w", err)
	}
	held := rows.Next()
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("error reading the store's guard: %w", err)
	}
	if !held {
		return fmt.Errorf("shard %d is not owned by %s at epoch %d: %w", e.shard, e.guard.Owner, e.guard.Epoch, ErrDeposed)
	}
	return nil
}

func (e *postgresEngine) attach(s *Store) { e.s = s }

func (e *postgresEngine) limits() (int64, int64, int64) {
	return postgresMaxKeys, postgresMaxBytes, postgresMaxValue
}

func (e *postgresEngine) applyEvery() time.Duration { return 0 }

func (e *postgresEngine) reopen() error { return nil }

func (e *postgresEngine) start(done <-chan struct{}) {
	e.cleaned = make(chan struct{})
	go func() {
		defer close(e.cleaned)
		e.cleanLoop(done)
	}()
}

// close waits for the expiry cleaner, so that the caller may close the pool.
func (e *postgresEngine) close(bool) error {
	if e.cleaned != nil {
		<-e.cleaned
	}
	return nil
}

// ctx is the context of one statement or batch.
func (e *postgresEngine) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.timeout)
}

// guardArgs are the guard's parameters: shard, owner, epoch.
func (e *postgresEngine) guardArgs() []any {
	return []any{e.shard, e.guard.Owner, e.guard.Epoch}
}

// deposedNow breaks the store's ownership: OnDeposed runs once.
func (e *postgresEngine) deposedNow() error {
	e.deposed.Do(func() {
		e.log.Warn("the store's guard failed: another owner holds its shard", "shard", e.shard)
		if e.onDeposed != nil {
			go e.onDeposed()
		}
	})
	return ErrDeposed
}
