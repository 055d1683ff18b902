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

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/lease"
	"github.com/tether-run/tether/schedule"
	"github.com/tether-run/tether/tenant"
	"github.com/tether-run/tether/work"
	"github.com/tether-run/tether/worker"
)

// Config is everything a server needs.
type Config struct {
	DataDir        string
	InMemory       bool // tests only: no durability
	Tenant         tenant.Config
	ReaperInterval time.Duration
	MaxBodyBytes   int64
	SkillMDPath    string
	Clock          clock.Clock
	Logger         *slog.Logger
	// AccessLog says which requests Logger records (TETHER_ACCESS_LOG).
	AccessLog api.AccessLog

	// WorkerStaleAfter is TETHER_WORKER_STALE_MS (worker.DefaultStaleAfter when zero).
	WorkerStaleAfter time.Duration
}

// Server is a running Tether.
type Server struct {
	Store     *graph.Store
	Tenants   *tenant.Service
	Leases    *lease.Service
	Work      *work.Service
	Workers   *worker.Registry
	Schedules *schedule.Service
	API       *api.Server
	http      *http.Server
	log       *slog.Logger
}

// Open opens the store and builds every service. The server does not listen
// until Serve.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var skill []byte
	if cfg.SkillMDPath != "" {
		b, err := os.ReadFile(cfg.SkillMDPath)
		if err != nil {
			return nil, fmt.Errorf("error reading TETHER_SKILL_MD_PATH: %w", err)
		}
		skill = b
	}
	store, err := graph.Open(graph.Options{Dir: cfg.DataDir, InMemory: cfg.InMemory, Clock: cfg.Clock, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	tenants, err := tenant.NewService(cfg.Tenant, store, cfg.Clock)
	if err != nil {
		store.Close()
		return nil, err
	}
	limits := func(ctx context.Context, t string) (lease.Limits, error) {
		p, err := tenants.Policy(ctx, t)
		if err != nil {
			return lease.Limits{}, err
		}
		return lease.Limits{
			TTLDefault:           time.Duration(p.ClaimTTLDefaultMS) * time.Millisecond,
			TTLMax:               time.Duration(p.ClaimTTLMaxMS) * time.Millisecond,
			MaxLeasesPerIdentity: p.MaxLeasesPerIdentity,
		}, nil
	}
	leases := lease.New(lease.Config{
		Store: store, Clock: cfg.Clock, Logger: cfg.Logger, Gate: work.Gate,
		ReaperInterval: cfg.ReaperInterval, Limits: limits,
	})
	w := work.New(work.Config{
		Store: store, Leases: leases, Logger: cfg.Logger, Limits: limits,
		Defaults: func(ctx context.Context, t string) (work.Defaults, error) {
			p, err := tenants.Policy(ctx, t)
			return work.Defaults{MaxAttempts: p.MaxAttemptsDefault}, err
		},
	})
	leases.SetHooks(lease.Hooks{AfterEnd: w.AfterEnd})
	if err := leases.Start(ctx); err != nil {
		store.Close()
		return nil, fmt.Errorf("error rebuilding leases: %w", err)
	}
	workers := worker.New(worker.Config{Store: store, StaleAfter: cfg.WorkerStaleAfter})
	schedules := schedule.New(schedule.Config{Store: store, Work: w, Clock: cfg.Clock, Logger: cfg.Logger})
	if err := schedules.Start(ctx); err != nil {
		leases.Stop()
		store.Close()
		return nil, err
	}
	a := api.New(api.Config{MaxBodyBytes: cfg.MaxBodyBytes, SkillMD: skill, AccessLog: cfg.AccessLog}, api.Deps{
		Store: store, Tenants: tenants, Leases: leases, Work: w, Workers: workers, Schedules: schedules,
		Clock: cfg.Clock, Logger: cfg.Logger,
	})
	s := &Server{
		Store: store, Tenants: tenants, Leases: leases, Work: w, Workers: workers, Schedules: schedules,
		API: a, log: cfg.Logger,
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

// Serve answers requests on l until Shutdown.
func (s *Server) Serve(l net.Listener) error {
	s.API.SetReady(true)
	err := s.http.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops taking requests, waits for in-flight ones (until ctx ends),
// stops the schedules' firing loop (a fire in progress completes) and the
// reaper, and closes the store.
func (s *Server) Shutdown(ctx context.Context) error {
	s.API.SetReady(false)
	err := s.http.Shutdown(ctx)
	s.Schedules.Stop()
	s.Leases.Stop()
	return errors.Join(err, s.Store.Close())
}
