package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/fleet"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/message"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/queuemetrics"
	"github.com/tether-run/tether/internal/retention"
	"github.com/tether-run/tether/internal/schedule"
	"github.com/tether-run/tether/internal/startstop"
	"github.com/tether-run/tether/internal/tenancy"
)

// Config is everything a server needs.
type Config struct {
	DataDir  string
	InMemory bool // tests only: no durability
	// KV, when set, is the storage engine (one shard's etcd-backed store,
	// say) instead of Badger in DataDir; the server closes it at Shutdown.
	KV             *kv.Store
	Tenant         tenancy.Config
	ReaperInterval time.Duration
	MaxBodyBytes   int64
	SkillMDPath    string
	Clock          clock.Clock
	Logger         *slog.Logger
	// AccessLog says which requests Logger records (TETHER_ACCESS_LOG).
	AccessLog api.AccessLog

	// WorkerStaleAfter is TETHER_WORKER_STALE_MS (fleet.DefaultStaleAfter when zero).
	WorkerStaleAfter time.Duration
	// WorkerOfflineRetention is TETHER_WORKER_OFFLINE_RETENTION_MS
	// (fleet.DefaultOfflineRetention when zero).
	WorkerOfflineRetention time.Duration
	// OperatorTokens may take backups (TETHER_OPERATOR_TOKENS).
	OperatorTokens []string
	// CleanerInterval is how often retention runs (retention.DefaultInterval
	// when zero).
	CleanerInterval time.Duration
	// Waits cap the long polls, event streams and MCP sessions and streams
	// open at once (TETHER_MAX_WAITS_PER_IDENTITY, TETHER_MAX_WAITS_PER_TENANT).
	Waits api.WaitLimits
	// QueueMetrics bound the label values of the per-queue series
	// (TETHER_METRICS_MAX_TENANTS, TETHER_METRICS_MAX_QUEUES).
	QueueMetrics queuemetrics.Limits
	// Tracer, when set, traces requests and their writes (package
	// internal/tracing); nil: tracing off.
	Tracer trace.TracerProvider

	// BlobMaxBytes is TETHER_BLOB_MAX_BYTES and BlobGrace TETHER_BLOB_GRACE_MS
	// (blob.DefaultMaxBytes and blob.DefaultGrace when zero). Blob files live
	// in DataDir/blobs (BlobDir, when set, for tests).
	BlobMaxBytes int64
	BlobGrace    time.Duration
	BlobDir      string

	// MCP, when set, builds the handler served at /mcp behind the API's
	// authentication (mcp.NewHandler, which `tether serve` wires) from the
	// API's own handler. This package does not import package mcp: mcp
	// imports the client, whose tests build servers.
	MCP func(api http.Handler) MCPHandler
}

// MCPHandler serves /mcp; Close ends its sessions at shutdown.
type MCPHandler interface {
	http.Handler
	Close()
}

// Server is a running Tether.
type Server struct {
	Store   *graphstore.Store
	Tenants *tenancy.Service
	Leases  *leasing.Service
	Nodes   *nodes.Service
	Workers *fleet.Registry
	Cleaner *retention.Cleaner
	API     *api.Server
	http    *http.Server
	log     *slog.Logger

	Messages  *message.Service
	Blobs     *blob.Service
	Schedules *schedule.Service
	mcp       MCPHandler
	// closers stop the background services and close the store, in the
	// reverse order Open started them.
	closers closers
}

// Open opens the store, builds every service and starts the background
// ones (startstop services, each stopped by Shutdown in reverse order). The
// server does not listen until Serve. When Open fails, what it had built is
// undone, last first, and the store is closed.
func Open(ctx context.Context, cfg Config) (_ *Server, err error) {
	cfg.Clock = clock.OrReal(cfg.Clock)
	cfg.Logger = logger.OrDiscard(cfg.Logger)
	var skill []byte
	if cfg.SkillMDPath != "" {
		b, err := os.ReadFile(cfg.SkillMDPath)
		if err != nil {
			return nil, fmt.Errorf("error reading TETHER_SKILL_MD_PATH: %w", err)
		}
		skill = b
	}
	store, err := graphstore.Open(graphstore.Options{Dir: cfg.DataDir, KV: cfg.KV, InMemory: cfg.InMemory, Clock: cfg.Clock, Logger: cfg.Logger})
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
			d := nodes.Defaults{MaxAttempts: p.MaxAttemptsDefault}
			if p.RetryInitialMS > 0 {
				d.Backoff = &graphstore.Backoff{InitialMS: p.RetryInitialMS, MaxMS: p.RetryMaxMS, Factor: tenancy.RetryFactor}
			}
			return d, err
		},
	})
	if err := start(leases); err != nil {
		return nil, fmt.Errorf("error rebuilding leases: %w", err)
	}
	workers := fleet.New(fleet.Config{Store: store, StaleAfter: cfg.WorkerStaleAfter, OfflineRetention: cfg.WorkerOfflineRetention})
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
	a := api.New(api.Config{
		MaxBodyBytes: cfg.MaxBodyBytes, SkillMD: skill, AccessLog: cfg.AccessLog, Waits: cfg.Waits, OperatorTokens: cfg.OperatorTokens,
		QueueMetrics: cfg.QueueMetrics, Tracer: cfg.Tracer,
	}, api.Deps{
		Store: store, Tenants: tenants, Leases: leases, Nodes: nodeService, Workers: workers, Retention: cleaner.Stats(),
		Clock: cfg.Clock, Logger: cfg.Logger, Messages: messages, Blobs: blobs, Schedules: schedules,
	})
	s := &Server{Store: store, Tenants: tenants, Leases: leases, Nodes: nodeService, Workers: workers, Cleaner: cleaner, API: a, log: cfg.Logger,
		Messages: messages, Blobs: blobs, Schedules: schedules, closers: undo}
	if cfg.MCP != nil {
		s.mcp = cfg.MCP(a.Handler())
		a.RouteMCP(s.mcp)
	}
	s.http = &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		// Long polls (up to 60 s) must fit inside the write timeout.
		WriteTimeout: 90 * time.Second,
		IdleTimeout:  120 * time.Second,
		ErrorLog:     slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// openBlobs opens the blob store in DataDir/blobs (an in-memory store keeps
// its blobs in BlobDir, or in a temporary directory, tmp, removed at
// shutdown); Open starts its sweeps.
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

// Serve answers requests on l until Shutdown.
func (s *Server) Serve(l net.Listener) error {
	s.API.SetReady(true)
	err := s.http.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops taking requests, ends long polls, streams and MCP sessions
// (whose leases are no longer renewed), waits for in-flight requests (until
// ctx ends), then stops the background services in the reverse order Open
// started them (the cleaner, the schedules' firing loop, whose fire in
// progress completes, the blob sweeps, the message sweep, the reaper) and
// closes the store.
func (s *Server) Shutdown(ctx context.Context) error {
	s.API.SetReady(false)
	s.API.Stop() // long polls and streams answer now instead of holding Shutdown
	if s.mcp != nil {
		s.mcp.Close() // no MCP session holds Shutdown or renews a lease from here on
	}
	err := s.http.Shutdown(ctx)
	return errors.Join(err, s.closers.close())
}
