package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/core"
	"github.com/tether-run/tether/internal/fleet"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/message"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/queuemetrics"
	"github.com/tether-run/tether/internal/retention"
	"github.com/tether-run/tether/internal/schedule"
	"github.com/tether-run/tether/internal/tenancy"
)

// Config is everything a server needs: the store and the services over
// it (core.Config), and the HTTP API's own settings.
type Config struct {
	core.Config
	MaxBodyBytes int64
	SkillMDPath  string
	// AccessLog says which requests Logger records (TETHER_ACCESS_LOG).
	AccessLog api.AccessLog
	// OperatorTokens may take backups (TETHER_OPERATOR_TOKENS).
	OperatorTokens []string
	// MetricsTokens may read every series of /metrics
	// (TETHER_METRICS_TOKENS); so may operator tokens.
	MetricsTokens []string
	// Waits cap the long polls, event streams and MCP sessions and streams
	// open at once (TETHER_MAX_WAITS_PER_IDENTITY, TETHER_MAX_WAITS_PER_TENANT).
	Waits api.WaitLimits
	// QueueMetrics bound the label values of the per-queue series
	// (TETHER_METRICS_MAX_TENANTS, TETHER_METRICS_MAX_QUEUES).
	QueueMetrics queuemetrics.Limits
	// Tracer, when set, traces requests and their writes (package
	// internal/tracing); nil: tracing off.
	Tracer trace.TracerProvider

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
	Lapses  *nodes.LapseReaper
	Workers *fleet.Registry
	Cleaner *retention.Cleaner
	API     *api.Server
	http    *http.Server
	// metricsHTTP serves every series on a listener of its own
	// (ServeMetrics).
	metricsHTTP *http.Server
	log         *slog.Logger

	Messages  *message.Service
	Blobs     *blob.Service
	Schedules *schedule.Service
	mcp       MCPHandler
	// core stops the background services and closes the store.
	core *core.Core
}

// Open opens the store and builds every service over it (core.Open, which
// starts the background ones; Shutdown stops them in reverse order), then
// the HTTP API on top. The server does not listen until Serve. When Open
// fails, what it had built is undone, last first, and the store is closed.
func Open(ctx context.Context, cfg Config) (*Server, error) {
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
	c, err := core.Open(ctx, cfg.Config)
	if err != nil {
		return nil, err
	}
	a := api.New(api.Config{
		MaxBodyBytes: cfg.MaxBodyBytes, SkillMD: skill, AccessLog: cfg.AccessLog, Waits: cfg.Waits, OperatorTokens: cfg.OperatorTokens,
		MetricsTokens: cfg.MetricsTokens, QueueMetrics: cfg.QueueMetrics, Tracer: cfg.Tracer,
	}, api.Deps{
		Store: c.Store, Tenants: c.Tenants, Leases: c.Leases, Nodes: c.Nodes, Workers: c.Workers, Retention: c.Cleaner.Stats(),
		Clock: cfg.Clock, Logger: cfg.Logger, Messages: c.Messages, Blobs: c.Blobs, Schedules: c.Schedules,
	})
	s := &Server{Store: c.Store, Tenants: c.Tenants, Leases: c.Leases, Nodes: c.Nodes, Lapses: c.Lapses, Workers: c.Workers, Cleaner: c.Cleaner, API: a, log: cfg.Logger,
		Messages: c.Messages, Blobs: c.Blobs, Schedules: c.Schedules, core: c}
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
	s.metricsHTTP = MetricsHTTP(a.MetricsHandler(), cfg.Logger)
	return s, nil
}

// MetricsHTTP is the server of a metrics listener (TETHER_METRICS_ADDR):
// GET /metrics answered by all, every series, the per-tenant ones included,
// to anyone who reaches it (api.MetricsListener). The operator binds it
// where only the scraper reaches.
func MetricsHTTP(all http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           api.MetricsListener(all),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// ServeMetrics answers GET /metrics with every series on l (MetricsHTTP)
// until Shutdown.
func (s *Server) ServeMetrics(l net.Listener) error {
	err := s.metricsHTTP.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
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
	merr := s.metricsHTTP.Shutdown(ctx)
	return errors.Join(err, merr, s.core.Close())
}
