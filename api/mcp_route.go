package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/fault"
	"github.com/tether-run/tether/tenant"
)

// MountMCP serves h, the MCP streamable HTTP transport (package mcp), at
// /mcp behind the bearer authentication of /v1: a request without valid
// credentials gets the same 401 problem. h learns the caller from Identity.
// Its tools call /v1 as that caller, so each call meets the route's role and
// the tenant's rate limit there. The transport's own refusals, which the
// MCP SDK writes as plain text, leave as problem documents like every other
// error.
func (s *Server) MountMCP(h http.Handler) {
	serve := s.authenticate(func(c echo.Context) error {
		w := &sdkRefusal{ResponseWriter: c.Response()}
		h.ServeHTTP(w, c.Request())
		if w.status == 0 {
			return nil
		}
		return mcpRefusal(w.status, strings.TrimSpace(w.body.String()), c.Request())
	})
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		s.echo.Add(m, "/mcp", serve)
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

// mcpRefusal is the error of a plain-text refusal of the MCP SDK.
func mcpRefusal(status int, text string, r *http.Request) error {
	switch status {
	case http.StatusBadRequest:
		return fault.Invalidf("", "%s", text)
	case http.StatusUnauthorized:
		return &fault.Unauthorized{Reason: text}
	case http.StatusForbidden:
		return &fault.Forbidden{Reason: "this MCP session belongs to another identity: " + text}
	case http.StatusNotFound:
		return &fault.NotFound{What: "MCP session", ID: r.Header.Get("Mcp-Session-Id")}
	case http.StatusRequestEntityTooLarge:
		return &fault.TooLarge{Reason: text}
	case http.StatusUnsupportedMediaType:
		return &fault.UnsupportedMediaType{Got: r.Header.Get("Content-Type")}
	case http.StatusMethodNotAllowed:
		return echo.ErrMethodNotAllowed
	}
	return errors.New("MCP transport: " + text) // logged; the client sees a 500
}

// sdkRefusal passes a response through, except an error the SDK writes as
// text/plain (http.Error), which it keeps for MountMCP to answer as a
// problem.
type sdkRefusal struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *sdkRefusal) WriteHeader(code int) {
	h := w.Header()
	if code >= 400 && strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		w.status = code
		h.Del("Content-Type")
		h.Del("X-Content-Type-Options")
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sdkRefusal) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets the SDK stream events.
func (w *sdkRefusal) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.status == 0 {
		f.Flush()
	}
}

func (w *sdkRefusal) Unwrap() http.ResponseWriter { return w.ResponseWriter }
