package api

import (
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/lease"
	"github.com/tether-run/tether/tenant"
	"github.com/tether-run/tether/work"
	"github.com/tether-run/tether/worker"
)

// Config are the HTTP-level settings.
type Config struct {
	MaxBodyBytes int64
	// SkillMD replaces the built-in /skill.md guide when non-empty.
	SkillMD []byte
}

// Deps are the domain services the handlers call.
type Deps struct {
	Store   *graph.Store
	Tenants *tenant.Service
	Leases  *lease.Service
	Work    *work.Service
	Workers *worker.Registry
	Clock   clock.Clock
	Logger  *slog.Logger
}

// Server is the HTTP face of Tether: thin handlers that decode, call a domain
// package and encode.
type Server struct {
	cfg     Config
	store   *graph.Store
	tenants *tenant.Service
	leases  *lease.Service
	work    *work.Service
	workers *worker.Registry
	clock   clock.Clock
	log     *slog.Logger
	echo    *echo.Echo
	metrics *metrics
	ready   atomic.Bool
}

// New builds the server and its routes.
func New(cfg Config, d Deps) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg: cfg, store: d.Store, tenants: d.Tenants, leases: d.Leases, work: d.Work,
		workers: d.Workers, clock: d.Clock, log: d.Logger, echo: echo.New(),
	}
	s.metrics = newMetrics(d.Leases.Stats(), d.Store.Stats())
	e := s.echo
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(s.requestID, s.observe, s.recoverer)
	s.routes()
	return s
}

// Handler is the http.Handler to serve.
func (s *Server) Handler() http.Handler { return s.echo }

// SetReady flips what /ready answers (false while starting and draining).
func (s *Server) SetReady(v bool) { s.ready.Store(v) }

func (s *Server) routes() {
	e := s.echo
	e.GET("/health", s.health)
	e.HEAD("/health", s.health)
	e.GET("/ready", s.readiness)
	e.HEAD("/ready", s.readiness)
	e.GET("/openapi.yaml", s.openapi)
	e.GET("/metrics", echo.WrapHandler(s.metrics.handler()))
	e.GET("/skill.md", s.skill)

	v1 := e.Group("/v1", s.authenticate, s.rateLimit)
	reader, worker, dispatcher, admin := tenant.RoleReader, tenant.RoleWorker, tenant.RoleDispatcher, tenant.RoleAdmin

	v1.GET("/tenant", s.getTenant, s.require(reader))
	v1.PATCH("/tenant/policy", s.patchPolicy, s.require(admin))
	v1.POST("/tokens", s.createToken, s.require(admin))
	v1.GET("/tokens", s.listTokens, s.require(admin))
	v1.DELETE("/tokens/:id", s.deleteToken, s.require(admin))

	v1.POST("/nodes", s.createNode, s.require(worker))
	v1.POST("/nodes/batch", s.createNodesBatch, s.require(worker))
	v1.GET("/nodes", s.listNodes, s.require(reader))
	v1.GET("/nodes/:id", s.getNode, s.require(reader))
	v1.PATCH("/nodes/:id", s.patchNode, s.require(worker))
	v1.DELETE("/nodes/:id", s.deleteNode, s.require(dispatcher))
	v1.GET("/nodes/:id/edges", s.listNodeEdges, s.require(reader))
	v1.GET("/nodes/:id/subgraph", s.getSubgraph, s.require(reader))

	v1.POST("/edges", s.createEdge, s.require(dispatcher))
	v1.DELETE("/edges", s.deleteEdge, s.require(dispatcher))

	v1.POST("/nodes/:id/claim", s.serveOp(s.opClaim), s.require(worker))
	v1.POST("/nodes/:id/renew", s.serveOp(s.opRenew), s.require(worker))
	v1.POST("/nodes/:id/extend", s.serveOp(s.opExtend), s.require(worker))
	v1.POST("/nodes/:id/release", s.serveOp(s.opRelease), s.require(worker))
	v1.POST("/nodes/:id/complete", s.serveOp(s.opComplete), s.require(worker))
	v1.POST("/nodes/:id/fail", s.serveOp(s.opFail), s.require(worker))
	v1.POST("/nodes/:id/progress", s.serveOp(s.opProgress), s.require(worker))
	v1.POST("/nodes/:id/status", s.setNodeStatus, s.require(worker))
	v1.POST("/nodes/:id/cancel", s.cancelNode, s.require(dispatcher))
	v1.POST("/nodes/:id/requeue", s.requeueNode, s.require(dispatcher))
	v1.GET("/leases", s.listLeases, s.require(reader))
	v1.POST("/batch", s.batch, s.require(worker))

	v1.GET("/queues", s.listQueues, s.require(reader))
	v1.PATCH("/queues/:queue", s.patchQueue, s.require(dispatcher))
	v1.POST("/queues/:queue/pause", s.pauseQueue, s.require(dispatcher))
	v1.POST("/queues/:queue/resume", s.resumeQueue, s.require(dispatcher))
	v1.POST("/queues/:queue/claim", s.claimNext, s.require(worker))
	v1.POST("/queues/:queue/claims", s.claimMany, s.require(worker))
	s.activityRoutes(v1)
	s.workerRoutes(v1)
}
