package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

type throughputMinute struct {
	At        Time  `json:"at"`
	Created   int64 `json:"created"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	Throttled int64 `json:"throttled"`
}

type throughputAnswer struct {
	Queue   string             `json:"queue"`
	Shared  bool               `json:"shared"`
	Minutes []throughputMinute `json:"minutes"`
}

// queueThroughput answers a queue's last hour, minute by minute, from what
// the server counted since it started (queuemetrics.Meter.Throughput).
func (s *Server) queueThroughput(c echo.Context) error {
	queue := c.Param("queue")
	if !graphstore.ValidQueue(queue) {
		return fault.Invalidf("queue", "must be 1-128 characters of [A-Za-z0-9._:-]")
	}
	minutes, shared := s.metrics.queueMeter.Throughput(principal(c).Tenant, queue)
	out := throughputAnswer{Queue: queue, Shared: shared, Minutes: make([]throughputMinute, len(minutes))}
	for i, m := range minutes {
		out.Minutes[i] = throughputMinute{At: Time(m.At), Created: m.Created, Completed: m.Completed, Failed: m.Failed, Throttled: m.Throttled}
	}
	return writeJSON(c, http.StatusOK, out)
}
