package api

import (
	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
)

// countThrottled tells the per-queue meter of a claim of queue's next
// nodes that handed nothing out because flow control held them back (t
// nil: nothing was ready, which is no throttle). A throttled claim writes
// nothing, so no durable transaction tells the meter of it.
func (s *Server) countThrottled(c echo.Context, queue string, t *fault.Throttled) {
	if t == nil {
		return
	}
	s.metrics.queueMeter.ClaimThrottled(principal(c).Tenant, queue, t.Reason)
}
