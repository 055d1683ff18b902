package api

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/tenancy"
)

// keepAliveEvery is how long an event stream may stay silent before a
// comment line keeps proxies from closing it.
const keepAliveEvery = 15 * time.Second

// activityRoutes registers comments and the event log.
func (s *Server) activityRoutes(v1 v1Router) {
	reader, worker := tenancy.RoleReader, tenancy.RoleWorker

	v1.add(http.MethodPost, "/nodes/:id/comments", s.createComment, worker)
	v1.add(http.MethodGet, "/nodes/:id/comments", s.listComments, reader)
	v1.add(http.MethodGet, "/nodes/:id/events", s.listNodeEvents, reader)
	v1.add(http.MethodGet, "/events", s.listEvents, reader)
}

type commentJSON struct {
	ID        string `json:"id"`
	NodeID    string `json:"node_id"`
	By        string `json:"by"`
	Body      string `json:"body"`
	CreatedAt Time   `json:"created_at"`
}

func toComment(c *records.Comment) commentJSON {
	return commentJSON{ID: c.ID, NodeID: c.NodeID, By: c.By, Body: c.Body, CreatedAt: Time(c.CreatedAt)}
}

type eventJSON struct {
	Seq    uint64            `json:"seq"`
	At     Time              `json:"at"`
	Type   records.EventType `json:"type"`
	NodeID string            `json:"node_id"`
	By     string            `json:"by"`
	Data   map[string]any    `json:"data"`
}

func toEvent(ev records.Event) eventJSON {
	return eventJSON{Seq: ev.Seq, At: Time(ev.At), Type: ev.Type, NodeID: ev.NodeID, By: ev.By, Data: ev.Data.Map()}
}

// eventList is the page of evs. next_cursor is the seq of the last event
// whenever there is one, so a poller always knows what to pass as after.
func eventList(evs []records.Event) list[eventJSON] {
	items := make([]eventJSON, len(evs))
	for i, ev := range evs {
		items[i] = toEvent(ev)
	}
	next := ""
	if len(evs) > 0 {
		next = strconv.FormatUint(evs[len(evs)-1].Seq, 10)
	}
	return newList(items, next)
}

func (s *Server) createComment(c echo.Context) error {
	var req struct {
		Body *string `json:"body"`
	}
	id, err := s.decodeFor(c, &req)
	if err != nil {
		return err
	}
	if req.Body == nil {
		return fault.Invalidf("body", "is required")
	}
	cm, err := s.nodes.AddComment(c.Request().Context(), caller(c), id, *req.Body)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusCreated, toComment(cm))
}

func (s *Server) listComments(c echo.Context) error {
	id, err := nodeID(c)
	if err != nil {
		return err
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	cms, next, err := s.nodes.Comments(principal(c).Tenant, id, limit, c.QueryParam("cursor"))
	if err != nil {
		return err
	}
	items := make([]commentJSON, len(cms))
	for i, cm := range cms {
		items[i] = toComment(cm)
	}
	return writeJSON(c, http.StatusOK, newList(items, next))
}

func (s *Server) listNodeEvents(c echo.Context) error {
	id, err := nodeID(c)
	if err != nil {
		return err
	}
	after, err := seqParam("after", c.QueryParam("after"))
	if err != nil {
		return err
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	t := principal(c).Tenant
	if err := s.behindRetention(t, after); err != nil {
		return err
	}
	evs, err := s.nodes.NodeEvents(t, id, after, limit)
	if err == nil {
		err = s.behindRetention(t, after)
	}
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, eventList(evs))
}

// behindRetention is a fault.Gone when the cursor after (a seq the caller
// has read up to; 0 for none) is behind tenant's retention horizon, so that
// reading on would skip events removed since. No cursor starts at the
// oldest event kept.
func (s *Server) behindRetention(tenant string, after uint64) error {
	if h := s.store.EventHorizon(tenant); after > 0 && after < h {
		return &fault.Gone{After: after, OldestSeq: h + 1}
	}
	return nil
}

// listEvents answers the tenant's event log: a page, a long poll (wait_ms),
// or, for Accept: text/event-stream, a stream of events as they commit.
func (s *Server) listEvents(c echo.Context) error {
	r := c.Request()
	after, err := seqParam("after", c.QueryParam("after"))
	if err != nil {
		return err
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	wait, err := waitParam(c.QueryParam("wait_ms"))
	if err != nil {
		return err
	}
	t := principal(c).Tenant
	if wantsStream(r) || wait > 0 {
		release, err := s.waiters.acquire(principal(c))
		if err != nil {
			return err
		}
		defer release()
	}
	if wantsStream(r) {
		// A reconnecting EventSource repeats the URL it was opened with and
		// says where it got to in Last-Event-ID, which therefore wins.
		if v := r.Header.Get("Last-Event-ID"); v != "" {
			if after, err = seqParam("Last-Event-ID", v); err != nil {
				return err
			}
		}
		if err := s.behindRetention(t, after); err != nil {
			return err
		}
		return s.streamEvents(c, t, after, limit)
	}
	if err := s.behindRetention(t, after); err != nil {
		return err
	}
	if wait == 0 {
		evs, err := s.nodes.Events(t, after, limit)
		if err == nil {
			err = s.behindRetention(t, after) // a removal may have raced the read
		}
		if err != nil {
			return err
		}
		return writeJSON(c, http.StatusOK, eventList(evs))
	}
	ctx, cancel := s.waitContext(r)
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, wait)
	defer stop()
	evs, err := s.nodes.WaitEvents(ctx, t, after, limit)
	if errors.Is(err, context.Canceled) && r.Context().Err() == nil {
		// The server is shutting down: answer what there is (nothing), as
		// if the wait had run out, so the poller simply polls again.
		err = nil
	}
	if err == nil {
		err = s.behindRetention(t, after)
	}
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, eventList(evs))
}

// streamEvents writes server-sent events: every event after `after` as
// "id: <seq>", "event: <type>", "data: <event JSON>", then each new one as it
// commits, with a keep-alive comment after keepAliveEvery of silence. It ends
// when the client goes away or the server shuts down.
func (s *Server) streamEvents(c echo.Context, t string, after uint64, limit int) error {
	ctx, cancel := s.waitContext(c.Request())
	defer cancel()
	w := c.Response()
	// The server's write timeout bounds ordinary responses; a stream has none.
	if err := http.NewResponseController(w).SetWriteDeadline(time.Time{}); err != nil {
		s.log.Warn("event stream keeps the write timeout", "err", err)
	}
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	w.Flush()

	var buf []byte
	for {
		waitCtx, stop := context.WithTimeout(ctx, keepAliveEvery)
		evs, err := s.nodes.WaitEvents(waitCtx, t, after, limit)
		stop()
		if ctx.Err() != nil {
			return nil
		}
		if err == nil && s.behindRetention(t, after) != nil {
			// The stream fell behind retention: end it, and the client's
			// reconnect (Last-Event-ID) gets the 410 that says so.
			return nil
		}
		if err != nil {
			// The status line is gone: all that is left is to end the stream.
			s.log.Error("error reading events for a stream", "err", err, "tenant", t)
			return nil
		}
		buf = buf[:0]
		if len(evs) == 0 {
			buf = append(buf, ": keep-alive\n\n"...)
		}
		for _, ev := range evs {
			if buf, err = appendEventMessage(buf, ev); err != nil {
				s.log.Error("error encoding an event", "err", err, "tenant", t, "seq", ev.Seq)
				return nil
			}
			after = ev.Seq
		}
		if _, err := w.Write(buf); err != nil {
			return nil // the client went away
		}
		w.Flush()
	}
}

// wantsStream reports whether the request accepts text/event-stream.
func wantsStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != "text/event-stream" {
				continue
			}
			if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q == 0 {
				continue
			}
			return true
		}
	}
	return false
}

// seqParam parses an event seq: a non-negative integer, 0 when absent.
func seqParam(name, v string) (uint64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fault.Invalidf(name, "must be a non-negative integer (an event seq)")
	}
	return uint64(n), nil
}

// waitParam reads the wait_ms query parameter, held to the same range as
// the wait_ms of a body.
func waitParam(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err == nil {
		err = duration.Check("wait_ms", n)
	}
	if err != nil {
		return 0, duration.Of("wait_ms").Invalid("wait_ms")
	}
	return duration.FromMS(n), nil
}
