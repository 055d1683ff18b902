package nodes

import (
	"context"
	"log/slog"
	"time"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/logger"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/testsignal"
)

// Defaults are the tenant policy values node creation needs.
type Defaults struct {
	MaxAttempts int64
	// Backoff is the retry backoff of a node created without one (the
	// tenant's retry_initial_ms and retry_max_ms, factor 2); nil: none.
	Backoff *records.Backoff
	// Retention is how long the tenant keeps finished nodes (0: forever):
	// the longest unique window a create may ask.
	Retention time.Duration
}

// DefaultsFunc returns the defaults of a tenant.
type DefaultsFunc func(ctx context.Context, tenant string) (Defaults, error)

// Service runs the lifecycle above leases.
type Service struct {
	// TestSignals tell tests where a long poll is; off unless a test
	// enables them.
	TestSignals TestSignals

	store    *graphstore.Store
	leases   *leasing.Service
	defaults DefaultsFunc
	limits   leasing.LimitsFunc
	log      *slog.Logger
}

// TestSignals are the lifecycle's signals to tests.
type TestSignals struct {
	// Parked carries the queue of each claim-next long poll that looked,
	// found nothing it may claim, and waits (subscribed, so whatever turns
	// ready from now on wakes it).
	Parked testsignal.Signal[string]
}

// Config wires a Service.
type Config struct {
	Store    *graphstore.Store
	Leases   *leasing.Service
	Defaults DefaultsFunc
	Limits   leasing.LimitsFunc
	Logger   *slog.Logger
}

// New builds a Service.
func New(cfg Config) *Service {
	cfg.Logger = logger.OrDiscard(cfg.Logger)
	return &Service{store: cfg.Store, leases: cfg.Leases, defaults: cfg.Defaults, limits: cfg.Limits, log: cfg.Logger}
}

// Caller is who acts, as far as the lifecycle cares.
type Caller struct {
	Tenant string
	Sub    string
	// Dispatcher is set for callers whose role may act on any node and
	// override another identity's lease.
	Dispatcher bool
}

// Dependency failure handling, the on_fail prop of a depends_on edge.
const (
	OnFailCancel = "cancel"
	OnFailIgnore = graphstore.OnFailIgnore
)

// Child failure handling, a node's on_child_fail.
const (
	OnChildFailFail   = lifecycle.OnChildFailFail
	OnChildFailIgnore = "ignore"
)

func ms(d int64) time.Duration { return duration.FromMS(d) }
