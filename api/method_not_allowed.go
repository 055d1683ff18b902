package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// The answer to a path that exists under another method: 405 with Allow,
// for every route, rather than the 404 of the /v1 catch-all. The table of
// routes is built on first use (after every route is registered) and read
// only on this error path.

// routeShape is one registered route: its path split into segments, a
// segment starting with ':' matching any one segment and '*' the rest.
type routeShape struct {
	method string
	segs   []string
}

func splitPath(p string) []string { return strings.Split(strings.Trim(p, "/"), "/") }

func (s *Server) routeShapes() []routeShape {
	s.routeTableOnce.Do(func() {
		for _, r := range s.echo.Routes() {
			if !knownMethod(r.Method) {
				continue // RouteNotFound's catch-alls
			}
			s.routeTable = append(s.routeTable, routeShape{method: r.Method, segs: splitPath(r.Path)})
		}
	})
	return s.routeTable
}

func knownMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}

func (r routeShape) matches(segs []string) bool {
	for i, s := range r.segs {
		if s == "*" {
			return true
		}
		if i >= len(segs) || segs[i] == "" || (s[0] != ':' && s != segs[i]) {
			return false
		}
	}
	return len(segs) == len(r.segs)
}

// allowedMethods are the methods path is routed for, sorted.
func (s *Server) allowedMethods(path string) []string {
	segs := splitPath(path)
	var out []string
	for _, r := range s.routeShapes() {
		if r.matches(segs) && !slices.Contains(out, r.method) {
			out = append(out, r.method)
		}
	}
	slices.Sort(out)
	return out
}

// notFoundOrWrongMethod is the handler of a request no route took: 405 with
// Allow when the path is routed for other methods, else 404.
func (s *Server) notFoundOrWrongMethod(c echo.Context) error {
	if allow := s.allowedMethods(c.Request().URL.Path); len(allow) > 0 {
		c.Response().Header().Set("Allow", strings.Join(allow, ", "))
		return echo.ErrMethodNotAllowed
	}
	return echo.ErrNotFound
}
