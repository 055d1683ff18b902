package api

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/fault"
	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/tenant"
	"github.com/tether-run/tether/work"
)

const principalKey = "tether.principal"

// recoverer turns a handler panic into a logged 500.
func (s *Server) recoverer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
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
}

// requestID takes the caller's X-Request-Id when it is sane, or makes one.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if id == "" || len(id) > 128 || strings.ContainsAny(id, "\r\n") {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

// observe logs every request and records its metrics.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		status := c.Response().Status
		elapsed := time.Since(start)
		s.metrics.observe(c.Request().Method, route, status, elapsed)
		attrs := []any{
			"method", c.Request().Method, "route", route, "path", c.Request().URL.Path,
			"status", status, "ms", float64(elapsed.Microseconds()) / 1000,
			"request_id", c.Response().Header().Get(echo.HeaderXRequestID),
		}
		if p, ok := c.Get(principalKey).(*tenant.Principal); ok {
			attrs = append(attrs, "tenant", p.Tenant, "sub", p.Subject)
		}
		s.log.Info("request", attrs...)
		return nil
	}
}

// authenticate resolves the bearer token into a principal.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := s.tenants.Authenticate(c.Request().Context(), c.Request().Header.Get("Authorization"))
		if err != nil {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tether"`)
			return err
		}
		c.Set(principalKey, p)
		// The store keeps tenants fair by the tenant on the context.
		c.SetRequest(c.Request().WithContext(graph.WithTenant(c.Request().Context(), p.Tenant)))
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
func (s *Server) require(r tenant.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if p := principal(c); !p.Allows(r) {
				return &fault.Forbidden{Reason: fmt.Sprintf("this action needs the %s role; %s has %s", r, p.Subject, p.Role)}
			}
			return next(c)
		}
	}
}

func principal(c echo.Context) *tenant.Principal {
	p, _ := c.Get(principalKey).(*tenant.Principal)
	return p
}

func caller(c echo.Context) work.Caller {
	p := principal(c)
	return work.Caller{Tenant: p.Tenant, Sub: p.Subject, Dispatcher: p.Allows(tenant.RoleDispatcher)}
}
