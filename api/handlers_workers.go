package api

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/fleet"
	"github.com/tether-run/tether/internal/tenancy"
)

// workerRoutes registers the worker registry.
func (s *Server) workerRoutes(v1 v1Router) {
	v1.add(http.MethodPost, "/workers/heartbeat", s.workerHeartbeat, tenancy.RoleWorker)
	v1.add(http.MethodGet, "/workers", s.listWorkers, tenancy.RoleReader)
}

type workerJSON struct {
	By         string         `json:"by"`
	Worker     string         `json:"worker"`
	Status     fleet.Status   `json:"status"`
	State      fleet.State    `json:"state"`
	Node       *string        `json:"node"`
	Meta       map[string]any `json:"meta"`
	StartedAt  Time           `json:"started_at"`
	LastSeenAt Time           `json:"last_seen_at"`
	Stale      bool           `json:"stale"`
}

func toWorker(v fleet.View) workerJSON {
	meta := v.Meta
	if meta == nil {
		meta = map[string]any{}
	}
	return workerJSON{
		By: v.By, Worker: v.Worker, Status: v.Status, State: v.State, Node: strPtr(v.Node), Meta: meta,
		StartedAt: Time(v.StartedAt), LastSeenAt: Time(v.LastSeenAt), Stale: v.Stale,
	}
}

// heartbeatAnswer is the caller's worker record and how many unread messages
// its inbox holds.
type heartbeatAnswer struct {
	workerJSON
	InboxUnread int64 `json:"inbox_unread"`
}

type heartbeatBody struct {
	Worker string          `json:"worker"`
	Status fleet.Status    `json:"status"`
	Node   *string         `json:"node"`
	Meta   json.RawMessage `json:"meta"`
}

// workerHeartbeat is POST /v1/workers/heartbeat: 200 with the caller's
// worker record.
func (s *Server) workerHeartbeat(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var b heartbeatBody
	if err := decodeStrict(body, &b, false); err != nil {
		return err
	}
	p := principal(c)
	hb := fleet.HeartbeatParams{Tenant: p.Tenant, By: p.Subject, Worker: b.Worker, Status: b.Status}
	if b.Node != nil {
		if *b.Node == "" {
			return fault.Invalidf("node", "is not a valid node id")
		}
		hb.Node = *b.Node
	}
	// meta absent keeps the last one, null clears it, an object replaces it.
	if b.Meta != nil {
		hb.SetMeta = true
		if !bytes.Equal(bytes.TrimSpace(b.Meta), []byte("null")) {
			if err := json.Unmarshal(b.Meta, &hb.Meta); err != nil {
				return fault.Invalidf("meta", "must be a JSON object or null")
			}
		}
	}
	v, err := s.workers.Heartbeat(c.Request().Context(), hb)
	if err != nil {
		return err
	}
	unread, err := s.messages.UnreadAll(p.Tenant, p.Subject)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, heartbeatAnswer{workerJSON: toWorker(v), InboxUnread: unread})
}

// listWorkers is GET /v1/workers.
func (s *Server) listWorkers(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	views, next, err := s.workers.List(principal(c).Tenant, c.QueryParam("cursor"), limit)
	if err != nil {
		return err
	}
	items := make([]workerJSON, len(views))
	for i, v := range views {
		items[i] = toWorker(v)
	}
	return writeJSON(c, http.StatusOK, newList(items, next))
}
