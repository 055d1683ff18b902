package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/tenancy"
)

// RouteMCP routes /mcp to h, the MCP streamable HTTP transport (package mcp),
// behind the bearer authentication of /v1: a request without valid
// credentials gets the same 401 problem. h learns the caller from Identity,
// and counts its sessions and streams against the caller's waits with
// HoldWait. Its tools call /v1 as that caller, so each call meets the
// route's role and the tenant's rate limit there. The transport's own
// refusals, which h and the MCP SDK write as plain text, leave as problem
// documents like every other error.
func (s *Server) RouteMCP(h http.Handler) {
	serve := s.authenticate(func(c echo.Context) error {
		w := &sdkRefusal{ResponseWriter: c.Response()}
		r := c.Request()
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), waitersKey{}, s.waiters)))
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
	p, _ := ctx.Value(principalKey{}).(*tenancy.Principal)
	if p == nil {
		return ""
	}
	return p.Tenant + "/" + p.Subject
}

// waitersKey carries the API's count of waiting requests to HoldWait.
type waitersKey struct{}

// HoldWait counts one long-lived thing of the caller of a request to /mcp
// (an MCP session, or its standalone stream) against the caps on waiting
// requests (WaitLimits: TETHER_MAX_WAITS_PER_IDENTITY and _PER_TENANT),
// as a long poll or an event stream is counted, until release. At a cap it
// refuses with a *fault.RateLimited naming it. Outside /mcp, or before
// authentication, it counts nothing.
func HoldWait(ctx context.Context) (release func(), err error) {
	w, _ := ctx.Value(waitersKey{}).(*waiters)
	p, _ := ctx.Value(principalKey{}).(*tenancy.Principal)
	if w == nil || p == nil {
		return func() {}, nil
	}
	return w.acquire(p)
}

// mcpRefusal is the error of a plain-text refusal of the MCP transport,
// from package mcp's handler or the SDK's. Every status either writes is
// mapped here; another one would be a new source of refusals, logged as an
// internal error until it is mapped. (The few refusals the SDK writes as a
// JSON-RPC error in application/json, for one message of a live session,
// pass through: an MCP client reads them as that call's error.)
func mcpRefusal(status int, text string, r *http.Request) error {
	switch status {
	case http.StatusBadRequest: // malformed message, headers or protocol version; GET or DELETE without a session
		return fault.Invalidf("", "%s", text)
	case http.StatusUnauthorized: // no caller (the authentication in front lets none through)
		return &fault.Unauthorized{Reason: text}
	case http.StatusForbidden: // an Origin refused, or a Host refused (DNS rebinding)
		return &fault.Forbidden{Reason: strings.TrimPrefix(text, "Forbidden: ")}
	case http.StatusNotFound: // no session of the caller's by that id (unknown, ended, or another identity's)
		return &fault.NotFound{What: "MCP session", ID: r.Header.Get("Mcp-Session-Id")}
	case http.StatusMethodNotAllowed:
		return echo.ErrMethodNotAllowed
	case http.StatusConflict: // a second standalone stream of one session
		return &fault.Conflict{Reason: "this MCP session already has a stream open (" + text + "): use that one, or close it first"}
	case http.StatusRequestEntityTooLarge:
		return &fault.TooLarge{Reason: text}
	case http.StatusUnsupportedMediaType:
		return &fault.UnsupportedMediaType{Got: r.Header.Get("Content-Type")}
	case http.StatusTooManyRequests: // a session or stream past a cap
		return &fault.RateLimited{Reason: text, RetryAfter: time.Second}
	case http.StatusServiceUnavailable: // the server is shutting down
		return fault.ErrUnavailable
	case http.StatusInternalServerError: // the SDK failed to connect or store a session
		return errors.New("MCP transport: " + text) // logged; the client sees a 500
	}
	return fmt.Errorf("MCP transport: unmapped status %d: %s", status, text) // logged; the client sees a 500
}

// sdkRefusal passes a response through, except an error the SDK writes as
// text/plain (http.Error), which it keeps for RouteMCP to answer as a
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
