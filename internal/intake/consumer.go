package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/pgschema"
	"github.com/tether-run/tether/internal/startstop"
	"github.com/tether-run/tether/internal/testsignal"
)

// Defaults and bounds of Config.
const (
	DefaultBatchSize    = 100
	MaxBatchSize        = 1000
	DefaultConcurrency  = 8
	MaxConcurrency      = 64
	DefaultPollInterval = 500 * time.Millisecond
	MinPollInterval     = 10 * time.Millisecond
	MaxPollInterval     = time.Minute
	// maxBackoff caps the wait after a failure (the database unreachable,
	// the API answering 503): it doubles from PollInterval up to this.
	maxBackoff = 30 * time.Second
)

// Config is what a Consumer needs.
type Config struct {
	// Pool reaches the database holding Schema's intake tables
	// (migration 0002_intake). The listener takes one of its connections
	// for its own.
	Pool *pgxpool.Pool
	// Schema holds the intake tables.
	Schema string
	// Creator makes the nodes.
	Creator Creator
	// BatchSize is how many rows one transaction takes (default 100, at
	// most 1000).
	BatchSize int
	// Concurrency is how many of a batch's nodes are being made at once
	// (default 8, at most 64), so their writes share the store's commits.
	Concurrency int
	// PollInterval is how often the table is read when no notification
	// came (default 500 ms, 10 ms to 1 min): the fallback where LISTEN is
	// missing (CockroachDB) or its connection is down.
	PollInterval time.Duration
	Logger       *slog.Logger
}

// withDefaults fills in the defaults and checks the bounds.
func (c Config) withDefaults() (Config, error) {
	switch {
	case c.Pool == nil:
		return c, errors.New("intake: Config.Pool is required")
	case c.Creator == nil:
		return c, errors.New("intake: Config.Creator is required")
	}
	if err := pgschema.ValidSchema(c.Schema); err != nil {
		return c, fmt.Errorf("intake: Config.Schema: %w", err)
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	switch {
	case c.BatchSize < 1 || c.BatchSize > MaxBatchSize:
		return c, fmt.Errorf("intake: Config.BatchSize must be 1-%d", MaxBatchSize)
	case c.Concurrency < 1 || c.Concurrency > MaxConcurrency:
		return c, fmt.Errorf("intake: Config.Concurrency must be 1-%d", MaxConcurrency)
	case c.PollInterval < MinPollInterval || c.PollInterval > MaxPollInterval:
		return c, fmt.Errorf("intake: Config.PollInterval must be %s to %s", MinPollInterval, MaxPollInterval)
	}
	c.Logger = logger.OrDiscard(c.Logger)
	return c, nil
}

// Consumer moves committed intake rows into Tether: it takes them in
// batches, makes each row's node through the Creator and deletes the rows,
// in one transaction per batch (batch.go). It reads the table at once when
// a notification comes (listen.go) and every PollInterval regardless.
type Consumer struct {
	startstop.BaseStartStop
	cfg Config
	sql statements
	// wake holds at most one pending "read the table now".
	wake chan struct{}
	// beforeCommit, when set (by tests), runs after a batch's creates and
	// before its rows are deleted; an error rolls the batch back, as a
	// crash there would.
	beforeCommit func(ctx context.Context) error

	// TestSignals tell tests what the consumer did; off unless a test
	// enables them.
	TestSignals TestSignals
}

// TestSignals are the consumer's signals to tests.
type TestSignals struct {
	// Listening: LISTEN is in place on the listener's connection.
	Listening testsignal.Signal[struct{}]
	// Committed: a batch committed (what it did).
	Committed testsignal.Signal[Outcome]
}

// Outcome is what one batch did.
type Outcome struct {
	// Created lists the rows whose node was made (or found made), by id.
	Created []int64
	// Failed lists the rows moved to intake_failed.
	Failed []int64
	// Deferred counts the rows left for later after a passing failure.
	Deferred int
}

// New checks cfg and builds a consumer; Start runs it.
func New(cfg Config) (*Consumer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Consumer{cfg: cfg, sql: statementsFor(cfg.Schema), wake: make(chan struct{}, 1)}, nil
}

// Start runs the listener and the batch loop until Stop.
func (c *Consumer) Start(ctx context.Context) error {
	ctx, ok, started, stopped := c.StartInit(ctx)
	if !ok {
		return nil
	}
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		c.listen(ctx)
	}()
	go func() {
		started()
		defer stopped()
		c.run(ctx)
		<-listening
	}()
	return nil
}

// Run runs a consumer made from cfg until ctx ends: the entry point for a
// server on PostgreSQL.
func Run(ctx context.Context, cfg Config) error {
	c, err := New(cfg)
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	c.Stop()
	return nil
}

// poke asks the loop to read the table now.
func (c *Consumer) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run takes batches until ctx ends: at once while batches come back full,
// then on a notification or every PollInterval; after a failure it backs
// off, doubling up to maxBackoff.
func (c *Consumer) run(ctx context.Context) {
	poll := time.NewTimer(c.cfg.PollInterval)
	poll.Stop()
	backoff := c.cfg.PollInterval
	for {
		taken, err := c.batch(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := c.cfg.PollInterval
		switch {
		case err != nil:
			c.cfg.Logger.Warn("intake: a batch failed; retrying", "error", err, "retry_in", backoff)
			wait, backoff = backoff, min(2*backoff, maxBackoff)
		case taken == c.cfg.BatchSize:
			backoff = c.cfg.PollInterval
			continue
		default:
			backoff = c.cfg.PollInterval
		}
		poll.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		case <-c.wake:
			if err != nil { // a failure waits out its backoff
				select {
				case <-ctx.Done():
					return
				case <-poll.C:
				}
			}
		}
		poll.Stop() // since Go 1.23 a stopped timer's channel holds nothing stale
	}
}
