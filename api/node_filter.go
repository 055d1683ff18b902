package api

import (
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// nodeFilter is the filters of GET /v1/nodes, read from its query string, and
// the filter object of POST /v1/nodes/bulk: one set of names and one meaning.
type nodeFilter struct {
	Type          string     `json:"type"`
	Status        string     `json:"status"`
	Queue         string     `json:"queue"`
	Label         string     `json:"label"`
	Target        string     `json:"target"`
	Parent        string     `json:"parent"`
	Holder        string     `json:"holder"`
	Q             string     `json:"q"`
	Ready         *bool      `json:"ready"`
	CreatedAfter  *time.Time `json:"created_after"`
	CreatedBefore *time.Time `json:"created_before"`
	UpdatedAfter  *time.Time `json:"updated_after"`
	UpdatedBefore *time.Time `json:"updated_before"`
}

// filterFromQuery reads a nodeFilter from query parameters.
func filterFromQuery(q url.Values) (nodeFilter, error) {
	f := nodeFilter{
		Type: q.Get("type"), Status: q.Get("status"), Queue: q.Get("queue"), Label: q.Get("label"),
		Target: q.Get("target"), Parent: q.Get("parent"), Holder: q.Get("holder"), Q: q.Get("q"),
	}
	if v := q.Get("ready"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return f, fault.Invalidf("ready", "must be true or false")
		}
		f.Ready = &b
	}
	for name, dst := range map[string]**time.Time{
		"created_after": &f.CreatedAfter, "created_before": &f.CreatedBefore,
		"updated_after": &f.UpdatedAfter, "updated_before": &f.UpdatedBefore,
	} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return f, fault.Invalidf(name, "must be an RFC 3339 date-time, such as 2026-11-28T09:00:00Z")
		}
		*dst = &t
	}
	return f, nil
}

// query is the graph query of f (without limit and cursor) and its
// readiness filter.
func (f nodeFilter) query() (graphstore.NodeQuery, *bool, error) {
	if f.Status != "" && !records.Status(f.Status).Valid() {
		return graphstore.NodeQuery{}, nil, fault.Invalidf("status", "must be one of open, queued, running, done, failed, dead, cancelled, expired")
	}
	if len(f.Q) > 200 {
		return graphstore.NodeQuery{}, nil, fault.Invalidf("q", "must be at most 200 bytes")
	}
	if !utf8.ValidString(f.Q) {
		// Case folding reads an invalid byte as U+FFFD, which would match
		// every title holding that character.
		return graphstore.NodeQuery{}, nil, fault.Invalidf("q", "must be valid UTF-8")
	}
	at := func(t *time.Time) time.Time {
		if t == nil {
			return time.Time{}
		}
		return *t
	}
	return graphstore.NodeQuery{
		Type: f.Type, Status: f.Status, Queue: f.Queue, Label: f.Label,
		Target: f.Target, Parent: f.Parent, Holder: f.Holder, Search: f.Q,
		Created: graphstore.TimeRange{After: at(f.CreatedAfter), Before: at(f.CreatedBefore)},
		Updated: graphstore.TimeRange{After: at(f.UpdatedAfter), Before: at(f.UpdatedBefore)},
	}, f.Ready, nil
}
