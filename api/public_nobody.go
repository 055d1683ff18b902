package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
)

// ErrBodyRefused answers a request that sends a body to a public endpoint,
// which takes none (the probes, the spec, metrics, the guide, the dashboard).
var ErrBodyRefused = fault.Invalidf("", "this endpoint takes no request body")

// HasBody reports whether r carries a request body: a Content-Length above
// zero, or a chunked body of unknown length.
func HasBody(r *http.Request) bool {
	return r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}

// noBody refuses a request with a body before the handler runs.
func noBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if HasBody(c.Request()) {
			return ErrBodyRefused
		}
		return next(c)
	}
}
