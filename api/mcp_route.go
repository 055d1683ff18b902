package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/tenant"
)

// MountMCP serves h, the MCP streamable HTTP transport (package mcp), at
// /mcp behind the bearer authentication of /v1: a request without a valid
// token is refused with the same 401 problem. h learns the caller from
// Identity. Its tools call /v1 as that caller, so each call meets the
// route's role and the tenant's rate limit there.
func (s *Server) MountMCP(h http.Handler) {
	wrapped := s.authenticate(echo.WrapHandler(h))
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		s.echo.Add(m, "/mcp", wrapped)
	}
}

// Identity is the caller of a request that passed authentication, as
// "tenant/subject"; "" before authentication.
func Identity(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(*tenant.Principal)
	if p == nil {
		return ""
	}
	return p.Tenant + "/" + p.Subject
}
