package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/message"
	"github.com/tether-run/tether/internal/tenancy"
)

// messageRoutes registers messages and inboxes, and their metrics.
func (s *Server) messageRoutes(v1 v1Router) {
	reader, worker := tenancy.RoleReader, tenancy.RoleWorker

	v1.add(http.MethodPost, "/messages", s.sendMessage, worker)
	v1.add(http.MethodGet, "/messages/:id", s.getMessage, reader)
	v1.add(http.MethodGet, "/inbox", s.listInbox, worker)
	v1.add(http.MethodPost, "/inbox/:id/ack", s.ackMessage, worker)

	st := s.messages.Stats()
	s.metrics.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_messages_sent_total", Help: "Messages sent."},
			func() float64 { return float64(st.Sent.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_messages_read_total", Help: "Messages acknowledged (read receipts)."},
			func() float64 { return float64(st.Read.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tether_messages_expired_total", Help: "Messages whose ttl passed before anyone read them."},
			func() float64 { return float64(st.Expired.Load()) }),
	)
}

type messageJSON struct {
	ID          string        `json:"id"`
	From        string        `json:"from"`
	To          string        `json:"to"`
	NodeID      *string       `json:"node_id"`
	Body        string        `json:"body"`
	Priority    int64         `json:"priority"`
	Thread      *string       `json:"thread"`
	State       message.State `json:"state"`
	CreatedAt   Time          `json:"created_at"`
	ExpiresAt   *Time         `json:"expires_at"`
	DeliveredAt *Time         `json:"delivered_at"`
	DeliveredTo *string       `json:"delivered_to"`
	ReadAt      *Time         `json:"read_at"`
	ReadBy      *string       `json:"read_by"`
}

func toMessage(v message.View) messageJSON {
	return messageJSON{
		ID: v.ID, From: v.From, To: v.To, NodeID: strPtr(v.Node()), Body: v.Body, Priority: v.Priority,
		Thread: strPtr(v.Thread), State: v.State, CreatedAt: Time(v.CreatedAt), ExpiresAt: timePtr(v.ExpiresAt),
		DeliveredAt: timePtr(v.DeliveredAt), DeliveredTo: strPtr(v.DeliveredTo),
		ReadAt: timePtr(v.ReadAt), ReadBy: strPtr(v.ReadBy),
	}
}

// messageID reads the :id of a message path.
func messageID(c echo.Context) (string, error) {
	id := c.Param("id")
	if !graphstore.ValidClientID(id) {
		return "", fault.Invalidf("id", "is not a valid message id")
	}
	return id, nil
}

// sendMessage is POST /v1/messages: 201 with the message.
func (s *Server) sendMessage(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var b struct {
		To       *string `json:"to"`
		Body     *string `json:"body"`
		Priority *int64  `json:"priority"`
		Thread   *string `json:"thread"`
		TTLMS    *int64  `json:"ttl_ms"`
	}
	if err := decodeStrict(body, &b, false); err != nil {
		return err
	}
	p := principal(c)
	sp := message.SendParams{Tenant: p.Tenant, From: p.Subject}
	switch {
	case b.To == nil:
		return fault.Invalidf("to", "is required")
	case b.Body == nil:
		return fault.Invalidf("body", "is required")
	case b.Thread != nil && *b.Thread == "":
		return fault.Invalidf("thread", "must not be empty (leave it out for none)")
	case b.TTLMS != nil && (*b.TTLMS < 1 || *b.TTLMS > message.MaxTTL.Milliseconds()):
		return fault.Invalidf("ttl_ms", "must be from 1 to %d", message.MaxTTL.Milliseconds())
	}
	sp.To, sp.Body = *b.To, *b.Body
	if b.Priority != nil {
		sp.Priority = *b.Priority
	}
	if b.Thread != nil {
		sp.Thread = *b.Thread
	}
	if b.TTLMS != nil {
		sp.TTL = time.Duration(*b.TTLMS) * time.Millisecond
	}
	rec, err := s.messages.Send(c.Request().Context(), sp)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusCreated, toMessage(message.View{Record: *rec, State: message.StatePending}))
}

// getMessage is GET /v1/messages/{id}: the message with its delivery and
// read receipt, for whoever may see it (see package message).
func (s *Server) getMessage(c echo.Context) error {
	id, err := messageID(c)
	if err != nil {
		return err
	}
	p := principal(c)
	v, err := s.messages.Get(message.Viewer{Tenant: p.Tenant, Sub: p.Subject, All: p.Allows(tenancy.RoleDispatcher)}, id)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, toMessage(v))
}

// listInbox is GET /v1/inbox: a page of the caller's inbox, or a long poll
// (wait_ms) while it is empty.
func (s *Server) listInbox(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	unread, err := boolParam(c, "unread")
	if err != nil {
		return err
	}
	wait, err := waitParam(c.QueryParam("wait_ms"))
	if err != nil {
		return err
	}
	p := principal(c)
	ip := message.InboxParams{
		Tenant: p.Tenant, Sub: p.Subject, Unread: unread != nil && *unread,
		Cursor: c.QueryParam("cursor"), Limit: limit, Wait: wait,
	}
	q := c.QueryParams()
	if q.Has("thread") {
		if ip.Thread = q.Get("thread"); ip.Thread == "" {
			return fault.Invalidf("thread", "must not be empty")
		}
	}
	if q.Has("node") {
		if ip.Node = q.Get("node"); ip.Node == "" {
			return fault.Invalidf("node", "is not a valid node id")
		}
	}
	if wait > 0 {
		release, err := s.waiters.acquire(p)
		if err != nil {
			return err
		}
		defer release()
	}
	ctx, cancel := s.waitContext(c.Request())
	defer cancel()
	views, next, err := s.messages.Inbox(ctx, ip)
	if err != nil {
		if c.Request().Context().Err() == nil && ctx.Err() != nil {
			// The server is shutting down: answer nothing, as if the wait
			// had run out, so the poller simply polls again.
			return writeJSON(c, http.StatusOK, newList([]messageJSON{}, ""))
		}
		return err
	}
	items := make([]messageJSON, len(views))
	for i, v := range views {
		items[i] = toMessage(v)
	}
	return writeJSON(c, http.StatusOK, newList(items, next))
}

// ackMessage is POST /v1/inbox/{id}/ack: the read receipt.
func (s *Server) ackMessage(c echo.Context) error {
	id, err := messageID(c)
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	if err := decodeStrict(body, &struct{}{}, true); err != nil {
		return err
	}
	p := principal(c)
	v, err := s.messages.Ack(c.Request().Context(), p.Tenant, p.Subject, id)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, toMessage(v))
}
