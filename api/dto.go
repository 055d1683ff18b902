package api

import (
	"encoding/json"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

// writeJSON answers v as JSON with status. It is c.JSON without parsing the
// query string when there is none: c.JSON looks for ?pretty on every answer,
// which costs a map even when the URL has no query. An answer with an
// appender of its own (encode.go) is written by it, unless ?pretty asks for
// c.JSON's indented form.
func writeJSON(c echo.Context, status int, v any) error {
	if c.QueryString() != "" {
		if _, pretty := c.QueryParams()["pretty"]; pretty {
			return c.JSON(status, v)
		}
	}
	r := c.Response()
	r.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	r.Status = status
	if a, ok := v.(jsonAppender); ok {
		return writeAppender(r, a)
	}
	return json.NewEncoder(r).Encode(v)
}

// Time marshals as RFC 3339 UTC with millisecond precision.
type Time time.Time

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON formats t in UTC with milliseconds, in one allocation.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(timeLayout)+2)
	b = append(b, '"')
	b = time.Time(t).UTC().AppendFormat(b, timeLayout)
	return append(b, '"'), nil
}

func timePtr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	v := Time(*t)
	return &v
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// fieldPtr is strPtr for a field of a record the answer is made from,
// pointing at the field itself instead of a copy: a claim's answer makes
// several of these per node.
func fieldPtr(s *string) *string {
	if *s == "" {
		return nil
	}
	return s
}

// nodeJSON is a node as answered. Its appender is generated from these
// fields (encode_gen.go; go generate ./api/), and node_shape_test.go holds
// them to the stored node's and to openapi.yaml's Node.
type nodeJSON struct {
	ID          string             `json:"id"`
	Type        string             `json:"type"`
	Title       string             `json:"title"`
	Body        string             `json:"body"`
	Status      records.Status     `json:"status"`
	Queue       *string            `json:"queue"`
	Priority    int64              `json:"priority"`
	Target      *string            `json:"target"`
	Labels      []string           `json:"labels"`
	Props       map[string]any     `json:"props"`
	Attempts    int64              `json:"attempts"`
	MaxAttempts int64              `json:"max_attempts"`
	RunAt       *Time              `json:"run_at"`
	TimeoutMS   *int64             `json:"timeout_ms"`
	Backoff     *records.Backoff   `json:"backoff"`
	Parent      *string            `json:"parent"`
	OnChildFail string             `json:"on_child_fail"`
	Ready       bool               `json:"ready"`
	BlockedBy   []string           `json:"blocked_by"`
	Lease       *leaseJSON         `json:"lease"`
	Result      json.RawMessage    `json:"result"`
	Error       *string            `json:"error"`
	Progress    *progressJSON      `json:"progress"`
	Usage       map[string]float64 `json:"usage"`
	UsageTotal  map[string]float64 `json:"usage_total"`
	Version     int64              `json:"version"`
	CreatedBy   string             `json:"created_by"`
	CreatedAt   Time               `json:"created_at"`
	UpdatedAt   Time               `json:"updated_at"`
	Blobs       []string           `json:"blobs"`
	Traceparent *string            `json:"traceparent,omitempty"`
	// ConcurrencyKeys is left out when the node has none.
	ConcurrencyKeys *[]string `json:"concurrency_keys,omitempty"`
}

type progressJSON struct {
	Pct       *float64 `json:"pct"`
	Message   *string  `json:"message"`
	UpdatedAt Time     `json:"updated_at"`
}

// leaseJSON is a live lease as answered; its appender is generated.
type leaseJSON struct {
	NodeID    string  `json:"node_id"`
	By        string  `json:"by"`
	Session   *string `json:"session"`
	Fence     uint64  `json:"fence"`
	TTLMS     int64   `json:"ttl_ms"`
	ClaimedAt Time    `json:"claimed_at"`
	RenewedAt Time    `json:"renewed_at"`
	Expires   int64   `json:"expires"`
	ExpiresAt Time    `json:"expires_at"`
}

// edgeJSON is an edge as answered; its appender is generated.
type edgeJSON struct {
	From      string         `json:"from"`
	Type      string         `json:"type"`
	To        string         `json:"to"`
	Props     map[string]any `json:"props"`
	CreatedBy string         `json:"created_by"`
	CreatedAt Time           `json:"created_at"`
	RetiredAt *Time          `json:"retired_at"`
}

func toNode(v nodes.NodeView) nodeJSON {
	n := v.Node
	out := nodeJSON{
		ID: n.ID, Type: n.Type, Title: n.Title, Body: n.Body, Status: n.Status,
		Queue: fieldPtr(&n.Queue), Priority: n.Priority, Target: fieldPtr(&n.Target),
		Labels: n.Labels, Props: n.Props, Attempts: n.Attempts, MaxAttempts: n.MaxAttempts,
		RunAt: timePtr(n.RunAt), TimeoutMS: n.TimeoutMS, Backoff: n.Backoff,
		Parent: fieldPtr(&n.Parent), OnChildFail: n.OnChildFail, Ready: v.Ready,
		BlockedBy: v.BlockedBy, Result: n.Result, Error: n.Error,
		Usage: n.Usage, UsageTotal: n.UsageTotal, Version: n.Version, CreatedBy: n.CreatedBy,
		CreatedAt: Time(n.CreatedAt), UpdatedAt: Time(n.UpdatedAt), Blobs: n.Blobs,
		Traceparent: fieldPtr(&n.Traceparent),
	}
	if len(n.ConcurrencyKeys) > 0 {
		out.ConcurrencyKeys = &n.ConcurrencyKeys
	}
	if out.Labels == nil {
		out.Labels = []string{}
	}
	if out.Blobs == nil {
		out.Blobs = []string{}
	}
	if out.Props == nil {
		out.Props = map[string]any{}
	}
	if out.BlockedBy == nil {
		out.BlockedBy = []string{}
	}
	if out.Usage == nil {
		out.Usage = map[string]float64{}
	}
	if out.UsageTotal == nil {
		out.UsageTotal = map[string]float64{}
	}
	if len(out.Result) == 0 {
		out.Result = json.RawMessage("null")
	}
	if n.Lease != nil {
		l := toLease(n.ID, n.Lease)
		out.Lease = &l
	}
	if n.Progress != nil {
		out.Progress = &progressJSON{Pct: n.Progress.Pct, Message: strPtr(n.Progress.Message), UpdatedAt: Time(n.Progress.UpdatedAt)}
	}
	return out
}

func toNodes(vs []nodes.NodeView) []nodeJSON {
	out := make([]nodeJSON, len(vs))
	for i, v := range vs {
		out[i] = toNode(v)
	}
	return out
}

func toLease(nodeID string, l *records.Lease) leaseJSON {
	return leaseJSON{
		NodeID: nodeID, By: l.By, Session: fieldPtr(&l.Session), Fence: l.Fence, TTLMS: l.TTLMS,
		ClaimedAt: Time(l.ClaimedAt), RenewedAt: Time(l.RenewedAt),
		Expires: l.ExpiresAt.UnixMilli(), ExpiresAt: Time(l.ExpiresAt),
	}
}

func toEdge(e *records.Edge) *edgeJSON {
	if e == nil {
		return nil
	}
	props := e.Props
	if props == nil {
		props = map[string]any{}
	}
	return &edgeJSON{
		From: e.From, Type: e.Type, To: e.To, Props: props, CreatedBy: e.CreatedBy,
		CreatedAt: Time(e.CreatedAt), RetiredAt: timePtr(e.RetiredAt),
	}
}

func toEdges(es []*records.Edge) []*edgeJSON {
	out := make([]*edgeJSON, len(es))
	for i, e := range es {
		out[i] = toEdge(e)
	}
	return out
}

// list is the shape of every paged list.
type list[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

func newList[T any](items []T, next string) list[T] {
	if items == nil {
		items = []T{}
	}
	return list[T]{Items: items, NextCursor: strPtr(next)}
}
