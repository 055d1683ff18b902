package retention

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/startstop"
	"github.com/tether-run/tether/internal/testsignal"
)

// Defaults.
const (
	// DefaultInterval is how often the cleaner looks for what is due.
	DefaultInterval = time.Second
	// DefaultBatch is the most nodes, or event groups, one transaction
	// removes.
	DefaultBatch = 256
)

// Config wires a Cleaner.
type Config struct {
	Store *graphstore.Store
	Clock clock.Clock
	// Retention returns how long tenant keeps what finished; 0 keeps it
	// forever.
	Retention func(ctx context.Context, tenant string) (time.Duration, error)
	Interval  time.Duration // DefaultInterval when zero
	Batch     int           // DefaultBatch when zero
	Logger    *slog.Logger
}

// Stats are running totals, for metrics.
type Stats struct {
	Nodes  atomic.Int64 // finished nodes removed
	Groups atomic.Int64 // event groups removed
	Passes atomic.Int64 // passes over every tenant
}

// Cleaner removes what is past retention, every Interval, between Start
// and Stop (startstop's: Stop waits for the pass in progress, which ends at
// its next write; a second Start does nothing).
type Cleaner struct {
	startstop.BaseStartStop

	// TestSignals tell tests that a timed pass ran; off unless a test
	// enables them.
	TestSignals TestSignals

	cfg   Config
	stats Stats
	wake  chan struct{}
	timer clock.Timer
	mu    sync.Mutex
}

// TestSignals are the cleaner's signals to tests.
type TestSignals struct {
	// Passed carries the outcome of each timed pass.
	Passed testsignal.Signal[error]
}

// New returns a cleaner; Start runs it.
func New(cfg Config) *Cleaner {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	cfg.Clock = clock.OrReal(cfg.Clock)
	cfg.Logger = logger.OrDiscard(cfg.Logger)
	return &Cleaner{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Stats returns the running totals.
func (c *Cleaner) Stats() *Stats { return &c.stats }

// Start runs the cleaner in the background.
func (c *Cleaner) Start(ctx context.Context) error {
	ctx, ok, started, stopped := c.StartInit(ctx)
	if !ok {
		return nil
	}
	c.arm()
	go func() {
		started()
		defer stopped()
		c.run(ctx)
	}()
	return nil
}

// arm schedules the next pass one Interval from now on the clock.
func (c *Cleaner) arm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timer = c.cfg.Clock.AfterFunc(c.cfg.Interval, func() {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	})
}

// run makes a pass at each wake until ctx, the stopping context, ends.
func (c *Cleaner) run(ctx context.Context) {
	defer func() {
		c.mu.Lock()
		c.timer.Stop()
		c.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		err := c.Pass(ctx)
		if err != nil && ctx.Err() == nil {
			c.cfg.Logger.Error("the retention cleaner's pass failed", "err", err)
		}
		c.arm()
		c.TestSignals.Passed.Signal(err)
	}
}

// Pass removes everything due now, tenant by tenant, Batch at a time.
func (c *Cleaner) Pass(ctx context.Context) error {
	defer c.stats.Passes.Add(1)
	for _, tenant := range c.cfg.Store.Tenants() {
		keep, err := c.cfg.Retention(ctx, tenant)
		if err != nil {
			return err
		}
		if keep <= 0 {
			continue
		}
		cutoff := c.cfg.Clock.Now().Add(-keep)
		for more := true; more; {
			if err := ctx.Err(); err != nil {
				return err
			}
			var nodes, groups int
			var moreNodes, moreGroups bool
			err := c.cfg.Store.Update(ctx, func(tx *graphstore.Tx) error {
				var err error
				nodes, moreNodes, err = tx.PurgeFinished(tenant, cutoff, c.cfg.Batch)
				return err
			})
			if err != nil {
				return err
			}
			err = c.cfg.Store.Update(ctx, func(tx *graphstore.Tx) error {
				var err error
				groups, moreGroups, err = tx.PurgeEvents(tenant, cutoff, c.cfg.Batch)
				return err
			})
			if err != nil {
				return err
			}
			c.stats.Nodes.Add(int64(nodes))
			c.stats.Groups.Add(int64(groups))
			more = moreNodes || moreGroups
		}
	}
	return nil
}
