package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/fault"
	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/lease"
	"github.com/tether-run/tether/tenant"
	"github.com/tether-run/tether/work"
)

type claimBody struct {
	Session string `json:"session"`
	TTLMS   *int64 `json:"ttl_ms"`
}

type holderBody struct {
	Session string `json:"session"`
	Fence   *int64 `json:"fence"`
}

func (b holderBody) params(c echo.Context, id string) (lease.HolderParams, error) {
	p := principal(c)
	hp := lease.HolderParams{Tenant: p.Tenant, NodeID: id, By: p.Subject, Session: b.Session}
	if b.Fence != nil {
		if *b.Fence < 1 {
			return hp, fault.Invalidf("fence", "must be a positive integer")
		}
		hp.Fence = uint64(*b.Fence)
	}
	return hp, nil
}

// decodeFor reads the node id and the optional JSON body of a lease call.
func (s *Server) decodeFor(c echo.Context, v any) (string, error) {
	id, err := nodeID(c)
	if err != nil {
		return "", err
	}
	body, err := s.readBody(c)
	if err != nil {
		return "", err
	}
	return id, decodeStrict(body, v, true)
}

func ttlParam(ms *int64) (time.Duration, error) {
	if ms == nil {
		return 0, nil
	}
	if *ms < 1 {
		return 0, fault.Invalidf("ttl_ms", "must be a positive integer")
	}
	return time.Duration(*ms) * time.Millisecond, nil
}

func (s *Server) claimNode(c echo.Context) error {
	var b claimBody
	id, err := s.decodeFor(c, &b)
	if err != nil {
		return err
	}
	return s.claim(c, id, b)
}

func (s *Server) claim(c echo.Context, id string, b claimBody) error {
	ttl, err := ttlParam(b.TTLMS)
	if err != nil {
		return err
	}
	p := principal(c)
	res, err := s.leases.Claim(c.Request().Context(), lease.ClaimParams{
		Tenant: p.Tenant, NodeID: id, By: p.Subject, Session: b.Session, TTL: ttl,
	})
	if err != nil {
		return err
	}
	views, err := s.work.Views(res.Node)
	if err != nil {
		return err
	}
	out := map[string]any{
		"ok": true, "status": res.Node.Status, "renewed": res.Renewed,
		"lease": toLease(res.Node.ID, res.Lease), "edge": toEdge(res.Edge), "node": toNode(views[0]),
	}
	if res.Capped {
		out["capped_to_max"] = true
		out["claim_ttl_max_ms"] = res.TTLMax.Milliseconds()
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) renewLease(c echo.Context) error {
	var b holderBody
	id, err := s.decodeFor(c, &b)
	if err != nil {
		return err
	}
	hp, err := b.params(c, id)
	if err != nil {
		return err
	}
	res, err := s.leases.Renew(c.Request().Context(), hp)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{
		"ok": true, "status": res.Node.Status, "lease": toLease(id, res.Lease), "inbox_unread": 0,
	})
}

func (s *Server) extendLease(c echo.Context) error {
	var b struct {
		holderBody
		MS *int64 `json:"ms"`
	}
	id, err := s.decodeFor(c, &b)
	if err != nil {
		return err
	}
	if b.MS == nil || *b.MS < 1 {
		return fault.Invalidf("ms", "must be a positive integer")
	}
	hp, err := b.params(c, id)
	if err != nil {
		return err
	}
	res, err := s.leases.Extend(c.Request().Context(), hp, time.Duration(*b.MS)*time.Millisecond)
	if err != nil {
		return err
	}
	out := map[string]any{"ok": true, "status": graph.StatusRunning, "lease": toLease(id, res.Lease)}
	if res.Capped {
		out["capped_to_max"] = true
		out["claim_ttl_max_ms"] = res.TTLMax.Milliseconds()
	}
	return c.JSON(http.StatusOK, out)
}

type releaseBody struct {
	holderBody
	Reason string `json:"reason"`
	To     string `json:"to"`
}

func (s *Server) releaseNode(c echo.Context) error {
	var b releaseBody
	id, err := s.decodeFor(c, &b)
	if err != nil {
		return err
	}
	return s.release(c, id, b)
}

func (s *Server) release(c echo.Context, id string, b releaseBody) error {
	hp, err := b.params(c, id)
	if err != nil {
		return err
	}
	hp.Override = principal(c).Allows(tenant.RoleDispatcher)
	n, err := s.leases.Release(c.Request().Context(), lease.ReleaseParams{HolderParams: hp, Reason: b.Reason, To: b.To})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ok": true, "status": n.Status})
}

type completeBody struct {
	holderBody
	Result json.RawMessage    `json:"result"`
	Usage  map[string]float64 `json:"usage"`
}

func (s *Server) completeNode(c echo.Context) error {
	var b completeBody
	id, err := s.decodeFor(c, &b)
	if err != nil {
		return err
	}
	return s.complete(c, id, b)
}

func (s *Server) complete(c echo.Context, id string, b completeBody) error {
	hp, err := b.params(c, id)
	if err != nil {
		return err
	}
	hp.Override = principal(c).Allows(tenant.RoleDispatcher)
	n, err := s.work.Complete(c.Request().Context(), work.CompleteParams{HolderParams: hp, Result: b.Result, Usage: b.Usage})
	if err != nil {
		return err
	}
	views, err := s.work.Views(n)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ok": true, "status": n.Status, "node": toNode(views[0])})
}

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
	ids, err := s.work.Cancel(c.Request().Context(), caller(c), id, reason)
	if err != nil {
		return err
	}
	out := map[string]any{"ok": true, "cancelled": ids}
	if withStatus {
		out["status"] = graph.StatusCancelled
	}
	return c.JSON(http.StatusOK, out)
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
	hb := holderBody{Session: b.Session, Fence: b.Fence}
	switch b.Status {
	case "running", "in_progress", "in-progress":
		return s.claim(c, id, claimBody{Session: b.Session, TTLMS: b.TTLMS})
	case "done":
		return s.complete(c, id, completeBody{holderBody: hb, Result: b.Result, Usage: b.Usage})
	case "queued", "open", "todo":
		return s.release(c, id, releaseBody{holderBody: hb, Reason: b.Reason})
	case "cancelled":
		if !principal(c).Allows(tenant.RoleDispatcher) {
			return &fault.Forbidden{Reason: "cancelling needs the dispatcher role"}
		}
		return s.cancel(c, id, b.Reason, true)
	case "":
		return fault.Invalidf("status", "is required")
	}
	return fault.Invalidf("status", "must be one of running, in_progress, done, queued, open, todo, cancelled")
}

func (s *Server) listLeases(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	views, next, err := s.work.Leases(principal(c).Tenant, c.QueryParam("holder"), c.QueryParam("queue"), limit, c.QueryParam("cursor"))
	if err != nil {
		return err
	}
	items := make([]leaseJSON, len(views))
	for i, v := range views {
		items[i] = toLease(v.NodeID, v.Lease)
	}
	return c.JSON(http.StatusOK, newList(items, next))
}
