package api

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/trace"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/clock"
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

// Config are the HTTP-level settings.
type Config struct {
	MaxBodyBytes int64
	// SkillMD replaces the built-in /skill.md guide when non-empty.
	SkillMD []byte
	// AccessLog says which requests are logged (the zero value: errors).
	AccessLog AccessLog
	// OperatorTokens may call the server-wide operator endpoints (backup),
	// which reach every tenant's records (TETHER_OPERATOR_TOKENS). None: the
	// operator endpoints refuse every caller.
	OperatorTokens []string
	// MetricsTokens may read every series of /metrics, those that name
	// tenants and queues included, and nothing else
	// (TETHER_METRICS_TOKENS); operator tokens may too. Without a token a
	// scrape gets the process-wide series only.
	MetricsTokens []string
	// Waits cap the long polls, event streams and MCP sessions and streams
	// open at once.
	Waits WaitLimits
	// QueueMetrics bound the label values of the per-queue series
	// (TETHER_METRICS_MAX_TENANTS, TETHER_METRICS_MAX_QUEUES).
	QueueMetrics queuemetrics.Limits
	// Tracer, when set, traces every request (api/tracing.go); nil: no
	// tracing, and no middleware for it.
	Tracer trace.TracerProvider
}

// Deps are the domain services the handlers call.
type Deps struct {
	Store   *graphstore.Store
	Tenants *tenancy.Service
	Leases  *leasing.Service
	Nodes   *nodes.Service
	Workers *fleet.Registry
	// Retention are the cleaner's totals, for /metrics (none when nil).
	Retention *retention.Stats
	Clock     clock.Clock
	Logger    *slog.Logger

	// Messages are the inboxes (package message).
	Messages *message.Service
	// Blobs are the blob store (package blob).
	Blobs *blob.Service
	// Schedules fire nodes on a timetable (package schedule).
	Schedules *schedule.Service
}

// Server is the HTTP face of Tether: thin handlers that decode, call a domain
// package and encode.
type Server struct {
	// TestSignals tell tests what requests did; off unless a test enables
	// them.
	TestSignals TestSignals

	cfg     Config
	store   *graphstore.Store
	tenants *tenancy.Service
	leases  *leasing.Service
	nodes   *nodes.Service
	workers *fleet.Registry
	blobs   *blob.Service
	clock   clock.Clock
	log     *slog.Logger
	echo    *echo.Echo
	metrics *metrics
	ready   atomic.Bool
	sampled atomic.Uint64 // requests below 400 seen by a sampling access log
	// stopping ends when the server begins to stop (Stop): every long poll
	// and stream waits on it, so none holds up a shutdown.
	stopping context.Context
	stop     context.CancelFunc
	// operatorSums are the SHA-256 of the operator tokens, so comparing
	// never leaks a token's length.
	operatorSums [][sha256.Size]byte
	// scrapers decide which series a GET /metrics reads.
	scrapers Scrapers
	waiters  *waiters

	messages  *message.Service
	schedules *schedule.Service

	routeTableOnce sync.Once // routeTable: the routes, for 405's Allow
	routeTable     []routeShape

	batchOps map[string]batchReader // the ops of POST /v1/batch by name, made once
}

// New builds the server and its routes.
func New(cfg Config, d Deps) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	d.Logger = logger.OrDiscard(d.Logger)
	s := &Server{
		cfg: cfg, store: d.Store, tenants: d.Tenants, leases: d.Leases, nodes: d.Nodes,
		workers: d.Workers, blobs: d.Blobs, clock: d.Clock, log: d.Logger, echo: echo.New(),
		messages: d.Messages, schedules: d.Schedules,
	}
	s.waiters = newWaiters(cfg.Waits, &s.TestSignals.Waiting)
	s.stopping, s.stop = context.WithCancel(context.Background())
	s.batchOps = batchReaders()
	for _, t := range cfg.OperatorTokens {
		if t != "" {
			s.operatorSums = append(s.operatorSums, sha256.Sum256([]byte(t)))
		}
	}
	s.scrapers = NewScrapers(cfg.OperatorTokens, cfg.MetricsTokens)
	s.metrics = newMetrics(d.Leases.Stats(), d.Store.Stats())
	if d.Retention != nil {
		s.metrics.retention(d.Retention)
	}
	s.metrics.readiness(s.isReady)
	s.metrics.queues(d.Store, cfg.QueueMetrics)
	e := s.echo
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(s.edge)
	if cfg.Tracer != nil {
		e.Use(traced(cfg.Tracer))
	}
	s.routes()
	return s
}

// Handler is the http.Handler to serve.
func (s *Server) Handler() http.Handler { return s.echo }

// SetReady flips what /ready answers (false while starting and draining).
func (s *Server) SetReady(v bool) { s.ready.Store(v) }

// Stop ends every long poll and stream, now and from now on: a waiting poll
// answers at once with what there is, as if its wait_ms had run out, and a
// stream ends. Other requests are not touched (http.Server.Shutdown drains
// them). Call it before Shutdown; calling it again does nothing.
func (s *Server) Stop() { s.stop() }

// waitContext returns a context of r that also ends when the server stops:
// what a long poll or a stream waits on.
func (s *Server) waitContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	unhook := context.AfterFunc(s.stopping, cancel)
	return ctx, func() { unhook(); cancel() }
}

// stopped is closed once the server stops (Stop).
func (s *Server) stopped() <-chan struct{} { return s.stopping.Done() }

func (s *Server) routes() {
	e := s.echo
	e.GET("/health", s.health, noBody)
	e.HEAD("/health", s.health, noBody)
	e.GET("/ready", s.readiness, noBody)
	e.HEAD("/ready", s.readiness, noBody)
	e.GET("/openapi.yaml", s.openapi, noBody)
	e.GET("/metrics", s.scrape, noBody)
	e.GET("/skill.md", s.skill, noBody)
	e.GET("/admin/backup", s.backup)
	s.dashboardRoutes()

	v1 := s.v1Routes()
	reader, worker, dispatcher, admin := tenancy.RoleReader, tenancy.RoleWorker, tenancy.RoleDispatcher, tenancy.RoleAdmin

	v1.add(http.MethodGet, "/tenant", s.getTenant, reader)
	v1.add(http.MethodPatch, "/tenant/policy", s.patchPolicy, admin)
	v1.add(http.MethodPost, "/tokens", s.createToken, admin)
	v1.add(http.MethodGet, "/tokens", s.listTokens, admin)
	v1.add(http.MethodDelete, "/tokens/:id", s.deleteToken, admin)

	v1.add(http.MethodPost, "/nodes", s.createNode, worker)
	v1.add(http.MethodPost, "/nodes/batch", s.createNodesBatch, worker)
	v1.add(http.MethodPost, "/nodes/bulk", s.bulkNodes, dispatcher)
	v1.add(http.MethodGet, "/nodes", s.listNodes, reader)
	v1.add(http.MethodGet, "/nodes/:id", s.getNode, reader)
	v1.add(http.MethodPatch, "/nodes/:id", s.patchNode, worker)
	v1.add(http.MethodDelete, "/nodes/:id", s.deleteNode, dispatcher)
	v1.add(http.MethodGet, "/nodes/:id/edges", s.listNodeEdges, reader)
	v1.add(http.MethodGet, "/nodes/:id/subgraph", s.getSubgraph, reader)

	v1.add(http.MethodPost, "/edges", s.createEdge, dispatcher)
	v1.add(http.MethodDelete, "/edges", s.deleteEdge, dispatcher)

	v1.add(http.MethodPost, "/nodes/:id/claim", s.serveOp(s.opClaim), worker)
	v1.add(http.MethodPost, "/nodes/:id/renew", s.serveOp(s.opRenew), worker)
	v1.add(http.MethodPost, "/nodes/:id/extend", s.serveOp(s.opExtend), worker)
	v1.add(http.MethodPost, "/nodes/:id/release", s.serveOp(s.opRelease), worker)
	v1.add(http.MethodPost, "/nodes/:id/complete", s.serveOp(s.opCompleteNode), worker)
	v1.add(http.MethodPost, "/nodes/:id/fail", s.serveOp(s.opFail), worker)
	v1.add(http.MethodPost, "/nodes/:id/progress", s.serveOp(s.opProgress), worker)
	v1.add(http.MethodPost, "/nodes/:id/status", s.setNodeStatus, worker)
	v1.add(http.MethodPost, "/nodes/:id/cancel", s.cancelNode, dispatcher)
	v1.add(http.MethodPost, "/nodes/:id/requeue", s.requeueNode, dispatcher)
	v1.add(http.MethodGet, "/leases", s.listLeases, reader)
	v1.add(http.MethodPost, "/batch", s.batch, worker)

	v1.add(http.MethodGet, "/queues", s.listQueues, reader)
	v1.add(http.MethodPatch, "/queues/:queue", s.patchQueue, dispatcher)
	v1.add(http.MethodGet, "/queues/:queue/throughput", s.queueThroughput, reader)
	v1.add(http.MethodPost, "/queues/:queue/pause", s.pauseQueue, dispatcher)
	v1.add(http.MethodPost, "/queues/:queue/resume", s.resumeQueue, dispatcher)
	v1.add(http.MethodPost, "/queues/:queue/claim", s.claimNext, worker)
	v1.add(http.MethodPost, "/queues/:queue/claims", s.claimMany, worker)
	v1.add(http.MethodGet, "/limits", s.listLimits, reader)
	v1.add(http.MethodPut, "/limits/:key", s.putLimit, dispatcher)
	v1.add(http.MethodDelete, "/limits/:key", s.deleteLimit, dispatcher)
	v1.add(http.MethodGet, "/budgets", s.listBudgets, reader)
	v1.add(http.MethodPut, "/budgets/:key", s.putBudget, dispatcher)
	v1.add(http.MethodDelete, "/budgets/:key", s.deleteBudget, dispatcher)
	s.activityRoutes(v1)
	s.workerRoutes(v1)
	s.messageRoutes(v1)
	s.blobRoutes(v1)
	s.scheduleRoutes(v1)
}

// v1Router registers the routes under /v1: each behind authentication, the
// tenant's rate limit and a role. A route's middleware chain is built once,
// here, since Echo v4 would build it afresh on every request.
type v1Router struct{ s *Server }

func (s *Server) v1Routes() v1Router {
	// An unknown path under /v1 is still authenticated first, so that only a
	// caller learns which paths are not there.
	notFound := s.authenticate(s.rateLimit(s.notFoundOrWrongMethod))
	s.echo.RouteNotFound("/v1", notFound)
	s.echo.RouteNotFound("/v1/*", notFound)
	return v1Router{s}
}

func (g v1Router) add(method, path string, h echo.HandlerFunc, r tenancy.Role) {
	g.s.echo.Add(method, "/v1"+path, g.s.authenticate(g.s.rateLimit(g.s.require(r)(h))))
}
