package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/tenancy"
)

func (s *Server) cancelNode(c echo.Context) error {
	var b struct {
		Reason string `json:"reason"`
	}
	id, err := s.decodeFor(c, &b)
	if err != nil {
		return err
	}
	return s.cancel(c, id, b.Reason, false)
}

// cancel answers {ok, cancelled}; the status-verb form also names the status.
func (s *Server) cancel(c echo.Context, id, reason string, withStatus bool) error {
	ids, err := s.nodes.Cancel(c.Request().Context(), caller(c), id, reason)
	if err != nil {
		return err
	}
	out := map[string]any{"ok": true, "cancelled": ids}
	if withStatus {
		out["status"] = records.StatusCancelled
	}
	return writeJSON(c, http.StatusOK, out)
}

// setNodeStatus is the status-verb form of the lease calls, for clients that
// speak in statuses (the OpenClaw Spine workers).
func (s *Server) setNodeStatus(c echo.Context) error {
	var b struct {
		Status  string             `json:"status"`
		Session string             `json:"session"`
		Fence   *int64             `json:"fence"`
		TTLMS   *int64             `json:"ttl_ms"`
		Result  json.RawMessage    `json:"result"`
		Usage   map[string]float64 `json:"usage"`
		Reason  string             `json:"reason"`
	}
	id, err := s.decodeFor(c, &b)
	if err != nil {
		return err
	}
	ctx, p := c.Request().Context(), principal(c)
	hb := holderBody{Session: b.Session, Fence: b.Fence}
	var status int
	var out any
	switch b.Status {
	case "running", "in_progress", "in-progress":
		status, out, err = s.claim(ctx, p, id, claimBody{Session: b.Session, TTLMS: b.TTLMS})
	case "done":
		status, out, err = s.complete(ctx, p, id, completeBody{holderBody: hb, Result: b.Result, Usage: b.Usage})
	case "queued", "open", "todo":
		status, out, err = s.release(ctx, p, id, releaseBody{holderBody: hb, Reason: b.Reason})
	case "cancelled":
		if !p.Allows(tenancy.RoleDispatcher) {
			return &fault.Forbidden{Reason: "cancelling needs the dispatcher role"}
		}
		return s.cancel(c, id, b.Reason, true)
	case "":
		return fault.Invalidf("status", "is required")
	default:
		return fault.Invalidf("status", "must be one of running, in_progress, done, queued, open, todo, cancelled")
	}
	if err != nil {
		return err
	}
	return writeJSON(c, status, out)
}

func (s *Server) requeueNode(c echo.Context) error {
	var b struct {
		Reason string `json:"reason"`
	}
	id, err := s.decodeFor(c, &b)
	if err != nil {
		return err
	}
	n, err := s.nodes.Requeue(c.Request().Context(), caller(c), id, b.Reason)
	if err != nil {
		return err
	}
	status, out, err := s.nodeAnswer(n)
	if err != nil {
		return err
	}
	return writeJSON(c, status, out)
}

func (s *Server) listLeases(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	views, next, err := s.nodes.Leases(principal(c).Tenant, c.QueryParam("holder"), c.QueryParam("queue"), limit, c.QueryParam("cursor"))
	if err != nil {
		return err
	}
	items := make([]leaseJSON, len(views))
	for i, v := range views {
		items[i] = toLease(v.NodeID, v.Lease)
	}
	return writeJSON(c, http.StatusOK, newList(items, next))
}
