package core

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/fleet"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/message"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/retention"
	"github.com/tether-run/tether/internal/schedule"
	"github.com/tether-run/tether/internal/startstop"
	"github.com/tether-run/tether/internal/tenancy"
)

// Config is what the services over one store need.
type Config struct {
	DataDir  string
	InMemory bool // tests only: no durability
	// KV, when set, is the storage engine (one shard's etcd-backed store,
	// say) instead of Badger in DataDir; Close closes it.
	KV *kv.Store
	// DuringRebuild is called around the store's rebuild at open
	// (graphstore.Options.DuringRebuild): serve pauses the proportional GC
	// there. nil: the runtime is left alone.
	DuringRebuild  func() (done func())
	Tenant         tenancy.Config
	ReaperInterval time.Duration
	Clock          clock.Clock
	Logger         *slog.Logger

	// WorkerStaleAfter and WorkerOfflineRetention are the fleet's
	// (fleet.DefaultStaleAfter and fleet.DefaultOfflineRetention when zero).
	WorkerStaleAfter       time.Duration
	WorkerOfflineRetention time.Duration
	// WorkerMaxPerIdentity and WorkerMaxPerTenant bound the fleet's rows
	// (fleet.DefaultMaxPerIdentity and fleet.DefaultMaxPerTenant when zero).
	WorkerMaxPerIdentity, WorkerMaxPerTenant int
	// CleanerInterval is how often retention runs (retention.DefaultInterval
	// when zero).
	CleanerInterval time.Duration

	// BlobMaxBytes and BlobGrace are blob.Config's (its defaults when zero).
	// Blob files live in DataDir/blobs (BlobDir, when set, for tests).
	BlobMaxBytes int64
	BlobGrace    time.Duration
	BlobDir      string
}

// Core is the store and the domain services over it, running.
type Core struct {
	Store     *graphstore.Store
	Tenants   *tenancy.Service
	Leases    *leasing.Service
	Nodes     *nodes.Service
	Lapses    *nodes.LapseReaper
	Workers   *fleet.Registry
	Cleaner   *retention.Cleaner
	Messages  *message.Service
	Blobs     *blob.Service
	Schedules *schedule.Service

	mu sync.Mutex
	// closers stop the background services and close the store, in the
	// reverse order Open started them.
	closers closers
}

// Open opens the store, builds every service and starts the background
// ones. When Open fails, what it had built is undone, last first, and the
// store is closed.
func Open(ctx context.Context, cfg Config) (_ *Core, err error) {
	cfg.Clock = clock.OrReal(cfg.Clock)
	cfg.Logger = logger.OrDiscard(cfg.Logger)
	store, err := graphstore.Open(graphstore.Options{Dir: cfg.DataDir, KV: cfg.KV, InMemory: cfg.InMemory, Clock: cfg.Clock, Logger: cfg.Logger,
		DuringRebuild: cfg.DuringRebuild,
		// The rebuild's scan maps the tables in; let go of them before the
		// writer starts, so the RSS once ready is the live state.
		ReleaseScanPages: true,
	})
	if err != nil {
		return nil, err
	}
	var undo closers
	undo.push(store.Close)
	defer func() {
		if err != nil {
			_ = undo.close() // the error that stopped Open is the one to report
		}
	}()
	// start starts a background service and stacks its Stop.
	start := func(svc startstop.Service) error {
		if err := svc.Start(ctx); err != nil {
			return err
		}
		undo.pushStop(svc.Stop)
		return nil
	}
	tenants, err := tenancy.NewService(cfg.Tenant, store, cfg.Clock)
	if err != nil {
		return nil, err
	}
	limits := func(ctx context.Context, t string) (leasing.Limits, error) {
		p, err := tenants.Policy(ctx, t)
		if err != nil {
			return leasing.Limits{}, err
		}
		return leasing.Limits{
			TTLDefault:           time.Duration(p.ClaimTTLDefaultMS) * time.Millisecond,
			TTLMax:               time.Duration(p.ClaimTTLMaxMS) * time.Millisecond,
			MaxLeasesPerIdentity: p.MaxLeasesPerIdentity,
		}, nil
	}
	leases := leasing.New(leasing.Config{
		Store: store, Clock: cfg.Clock, Logger: cfg.Logger,
		ReaperInterval: cfg.ReaperInterval, Limits: limits,
	})
	nodeService := nodes.New(nodes.Config{
		Store: store, Leases: leases, Logger: cfg.Logger, Limits: limits,
		Defaults: func(ctx context.Context, t string) (nodes.Defaults, error) {
			p, err := tenants.Policy(ctx, t)
			d := nodes.Defaults{MaxAttempts: p.MaxAttemptsDefault, Retention: time.Duration(p.RetentionMS) * time.Millisecond}
			if p.RetryInitialMS > 0 {
				d.Backoff = &records.Backoff{InitialMS: p.RetryInitialMS, MaxMS: p.RetryMaxMS, Factor: tenancy.RetryFactor}
			}
			return d, err
		},
	})
	if err := start(leases); err != nil {
		return nil, fmt.Errorf("error rebuilding leases: %w", err)
	}
	lapses := nodes.NewLapseReaper(nodes.LapseConfig{Store: store, Runs: leases, Clock: cfg.Clock, Logger: cfg.Logger, Interval: cfg.ReaperInterval})
	if err := start(lapses); err != nil {
		return nil, err
	}
	workers := fleet.New(fleet.Config{Store: store, StaleAfter: cfg.WorkerStaleAfter, OfflineRetention: cfg.WorkerOfflineRetention,
		MaxPerIdentity: cfg.WorkerMaxPerIdentity, MaxPerTenant: cfg.WorkerMaxPerTenant})
	cleaner := retention.New(retention.Config{
		Store: store, Clock: cfg.Clock, Logger: cfg.Logger, Interval: cfg.CleanerInterval,
		Retention: func(ctx context.Context, t string) (time.Duration, error) {
			p, err := tenants.Policy(ctx, t)
			return time.Duration(p.RetentionMS) * time.Millisecond, err
		},
	})
	messages, err := message.New(store)
	if err != nil {
		return nil, err
	}
	if err := start(messages); err != nil {
		return nil, err
	}
	blobs, blobTmp, err := openBlobs(cfg, store, tenants)
	if err != nil {
		return nil, err
	}
	if blobTmp != "" {
		undo.push(func() error { return os.RemoveAll(blobTmp) })
	}
	if err := start(blobs); err != nil {
		return nil, err
	}
	schedules := schedule.New(schedule.Config{Store: store, Nodes: nodeService, Clock: cfg.Clock, Logger: cfg.Logger})
	if err := start(schedules); err != nil {
		return nil, err
	}
	if err := start(cleaner); err != nil {
		return nil, err
	}
	return &Core{
		Store: store, Tenants: tenants, Leases: leases, Nodes: nodeService, Lapses: lapses, Workers: workers, Cleaner: cleaner,
		Messages: messages, Blobs: blobs, Schedules: schedules, closers: undo,
	}, nil
}

// openBlobs opens the blob store in DataDir/blobs (an in-memory store keeps
// its blobs in BlobDir, or in a temporary directory, tmp, removed at
// Close); Open starts its sweeps.
func openBlobs(cfg Config, store *graphstore.Store, tenants *tenancy.Service) (b *blob.Service, tmp string, err error) {
	dir := cfg.BlobDir
	if dir == "" && cfg.DataDir != "" && !cfg.InMemory {
		dir = filepath.Join(cfg.DataDir, "blobs")
	}
	if dir == "" {
		if tmp, err = os.MkdirTemp("", "tether-blobs-"); err != nil {
			return nil, "", err
		}
		dir = tmp
	}
	b, err = blob.Open(blob.Config{
		Dir: dir, Store: store, Clock: cfg.Clock, Logger: cfg.Logger,
		MaxBytes: cfg.BlobMaxBytes, Grace: cfg.BlobGrace,
		Quota: func(ctx context.Context, t string) (int64, error) {
			p, err := tenants.Policy(ctx, t)
			return p.BlobQuotaBytes, err
		},
	})
	if err != nil {
		if tmp != "" {
			_ = os.RemoveAll(tmp)
		}
		return nil, "", err
	}
	return b, tmp, nil
}

// Close stops the background services in the reverse order Open started
// them (the cleaner, the schedules' firing loop, whose fire in progress
// completes, the blob sweeps, the message sweep, the reaper) and closes the
// store. A second Close does nothing.
func (c *Core) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closers.close()
}
