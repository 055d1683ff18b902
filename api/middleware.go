package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/tenancy"
)

// principalKey is the request context key of the authenticated principal.
type principalKey struct{}

// edge is the one middleware every request passes, matched or not: it gives
// the request an id, turns a handler panic into a logged 500, and records the
// request's metrics and access log line. It is one middleware rather than
// three because Echo v4 builds the global chain afresh for every request, a
// closure for each middleware in it.
func (s *Server) edge(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		id := requestID(c.Request().Header.Get(echo.HeaderXRequestID))
		// The key is in canonical form already; Set would check it again.
		c.Response().Header()[echo.HeaderXRequestID] = []string{id}
		if err := recovered(next, c); err != nil {
			c.Error(err)
		}
		s.observe(c, id, time.Since(start))
		return nil
	}
}

// requestID is the caller's X-Request-Id when it is sane, or a new one.
func requestID(id string) string {
	if id != "" && len(id) <= 128 && !strings.ContainsAny(id, "\r\n") {
		return id
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// recovered runs next, turning its panic into an error.
func recovered(next echo.HandlerFunc, c echo.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return next(c)
}

// observe records a served request's metrics and, when the access log
// setting says so, its log line.
func (s *Server) observe(c echo.Context, id string, elapsed time.Duration) {
	route := c.Path()
	if route == "" {
		route = "unmatched"
	}
	r, status := c.Request(), c.Response().Status
	if status >= 500 && r.Context().Err() != nil {
		status = StatusClientGone
	}
	defer s.TestSignals.Served.Signal(Served{Method: r.Method, Route: route, Status: status})
	s.metrics.observe(r.Method, route, status, elapsed)
	level, ok := s.accessLevel(status)
	if !ok || !s.log.Enabled(r.Context(), level) {
		return
	}
	attrs := [8]slog.Attr{
		slog.String("method", methodLabel(r.Method)), slog.String("route", route), slog.String("path", r.URL.Path),
		slog.Int("status", status), slog.Float64("ms", float64(elapsed.Microseconds())/1000),
		slog.String("request_id", id),
	}
	n := 6
	if p := principal(c); p != nil {
		attrs[6], attrs[7] = slog.String("tenant", p.Tenant), slog.String("sub", p.Subject)
		n = 8
	}
	s.log.LogAttrs(r.Context(), level, "request", attrs[:n]...)
}

// authenticate resolves the bearer token into a principal, which it puts on
// the request's context with the tenant the store keeps fair by.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		p, err := s.tenants.Authenticate(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tether"`)
			return err
		}
		ctx := context.WithValue(graphstore.WithTenant(r.Context(), p.Tenant), principalKey{}, p)
		c.SetRequest(r.WithContext(ctx))
		return next(c)
	}
}

// rateLimit applies the tenant's requests_per_second to each identity.
func (s *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := principal(c)
		pol, err := s.tenants.Policy(c.Request().Context(), p.Tenant)
		if err != nil {
			return err
		}
		if pol.RequestsPerSecond > 0 {
			if ok, wait := s.tenants.Allow(p.Tenant, p.Subject, pol.RequestsPerSecond); !ok {
				return &fault.RateLimited{Reason: fmt.Sprintf("over the tenant's rate of %g requests per second", pol.RequestsPerSecond), RetryAfter: wait}
			}
		}
		return next(c)
	}
}

// require lets a request through only when the caller's role includes r.
func (s *Server) require(r tenancy.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if p := principal(c); !p.Allows(r) {
				return &fault.Forbidden{Reason: fmt.Sprintf("this action needs the %s role; %s has %s", r, p.Subject, p.Role)}
			}
			return next(c)
		}
	}
}

// principal is the request's authenticated caller (nil before authenticate).
func principal(c echo.Context) *tenancy.Principal {
	p, _ := c.Request().Context().Value(principalKey{}).(*tenancy.Principal)
	return p
}

func caller(c echo.Context) nodes.Caller { return callerOf(principal(c)) }

// callerOf is the nodes.Caller of principal p.
func callerOf(p *tenancy.Principal) nodes.Caller {
	return nodes.Caller{Tenant: p.Tenant, Sub: p.Subject, Dispatcher: p.Allows(tenancy.RoleDispatcher)}
}
