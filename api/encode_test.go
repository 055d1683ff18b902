package api

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

// sameAsEncodingJSON fails unless v's appender writes exactly the bytes
// encoding/json writes for v.
func sameAsEncodingJSON(t *testing.T, v jsonAppender) {
	t.Helper()
	want, err := json.Marshal(v)
	require.NoError(t, err)
	got, err := v.appendJSON(nil)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

// awkward are strings encoding/json escapes in every way it has.
var awkward = []string{
	"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "tab\tnew\nline\rcr\bbs\fff",
	"\x00\x01\x1f\x7f", "caf\u00e9 \u65e5\u672c", "sep\u2028and\u2029", "bad \xff\xfe utf8 \xe2\x80",
	"emoji \U0001F600", "\xed\xa0\x80 surrogate",
}

func testNodes() []nodes.NodeView {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.FixedZone("X", 3600))
	pct := 12.5
	small := 1e-7
	timeout := int64(30000)
	errText := "it <broke> & stopped"
	var out []nodes.NodeView
	for i, s := range awkward {
		n := &records.Node{
			Tenant: "acme", ID: "n-" + s, Type: s, Title: s, Body: s, Status: records.StatusRunning,
			Queue: s, Priority: int64(i) - 5, Target: s, Labels: []string{s, "x"},
			Attempts: int64(i), MaxAttempts: 3, OnChildFail: "fail", Version: int64(i * 7),
			CreatedBy: s, CreatedAt: at, UpdatedAt: at.Add(time.Duration(i) * time.Millisecond),
		}
		switch i % 4 {
		case 0:
			n.Props = map[string]any{"k": s, "n": 1.5, "nested": map[string]any{"<": []any{true, nil}}}
			n.Usage = map[string]float64{"tokens": 123456789, "tiny": 1e-9, "big": 1e22}
			n.UsageTotal = map[string]float64{"tokens": 0.1}
			n.Result = json.RawMessage(` { "ok" : true, "html": "<b>&</b>", "sep": "` + "\u2028" + `" } `)
			n.Progress = &records.Progress{Pct: &pct, Message: s, UpdatedAt: at}
		case 1:
			n.Result = json.RawMessage(`{"ok":true}`)
			n.RunAt = &at
			n.TimeoutMS = &timeout
			n.Backoff = &records.Backoff{InitialMS: 100, MaxMS: 1000, Factor: 2.5}
			n.Error = &errText
			n.Parent = s
			n.Progress = &records.Progress{Pct: &small, UpdatedAt: at}
		case 2:
			n.Result = json.RawMessage(`null`)
			n.Blobs = []string{"abc", s}
			n.Props = map[string]any{}
		case 3:
			n.Lease = &records.Lease{By: s, Session: s, Fence: uint64(i) << 40, TTLMS: 60000, ClaimedAt: at, RenewedAt: at, ExpiresAt: at.Add(time.Minute)}
			n.Progress = &records.Progress{UpdatedAt: at}
			n.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		}
		out = append(out, nodes.NodeView{Node: n, Readiness: nodes.Readiness{Ready: i%2 == 0, BlockedBy: []string{s}}})
	}
	return out
}

func TestAppendersMatchEncodingJSON(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, v := range testNodes() {
		node := toNode(v)
		sameAsEncodingJSON(t, &node)
		// The raw node, before toNode fills in empty slices and maps.
		raw := nodeJSON{ID: v.ID, Labels: nil, Props: nil, Usage: nil, Result: nil, CreatedAt: Time(at)}
		sameAsEncodingJSON(t, &raw)
		sameAsEncodingJSON(t, &nodeAnswer{OK: true, Status: v.Status, Node: node})
		l := records.Lease{By: v.CreatedBy, Fence: 7, TTLMS: 1000, ClaimedAt: at, RenewedAt: at, ExpiresAt: at}
		lease := toLease(v.ID, &l)
		sameAsEncodingJSON(t, &lease)
		sameAsEncodingJSON(t, &renewAnswer{OK: true, Status: v.Status, Lease: lease, InboxUnread: 3})
		edge := toEdge(&records.Edge{From: v.ID, Type: "assigned", To: v.CreatedBy, Props: v.Props, CreatedBy: v.Title, CreatedAt: at, RetiredAt: &at})
		for _, c := range []capped{{}, cappedTo(true, time.Hour)} {
			sameAsEncodingJSON(t, &claimAnswer{OK: true, Status: v.Status, Renewed: true, Lease: lease, Edge: edge, Node: node, capped: c})
			sameAsEncodingJSON(t, &claimAnswer{OK: true, Status: v.Status, Lease: lease, Node: node, capped: c})
		}
		done := nodeAnswer{OK: true, Status: v.Status, Node: node}
		sameAsEncodingJSON(t, &completeNextAnswer{nodeAnswer: done})
		sameAsEncodingJSON(t, &completeNextAnswer{nodeAnswer: done, Next: &claimAnswer{OK: true, Status: v.Status, Lease: lease, Edge: edge, Node: node}})
		sameAsEncodingJSON(t, &claimedList{Items: []claimedJSON{{Lease: lease, Node: node}, {Lease: lease, Node: raw}}})
		prob, _ := problemFor(&fault.NotFound{What: "node", ID: v.ID})
		sameAsEncodingJSON(t, &batchResults{Results: []batchResult{
			{ID: v.ID, Status: 200, Body: &nodeAnswer{OK: true, Status: v.Status, Node: node}},
			{ID: v.ID, Status: 404, Body: prob},
			{ID: v.ID, Status: 200, Body: map[string]any{"ok": true}},
			{ID: v.ID, Status: 500},
		}})
	}
	simple := &edgeJSON{From: "a", Type: "assigned", To: "w", CreatedBy: "w", CreatedAt: Time(at), Props: map[string]any{
		"session": nil, "fence": uint64(1) << 63, "outcome": "done<&>", "n": -3, "i64": int64(-1) << 62, "ok": false, "f": 1e21, "g": -1e-7,
	}}
	sameAsEncodingJSON(t, simple)
	sameAsEncodingJSON(t, &claimedList{})
	sameAsEncodingJSON(t, &claimedList{Items: []claimedJSON{}})
	sameAsEncodingJSON(t, &batchResults{})
	// Pages: of items with appenders, item by item; of others, marshalled.
	sameAsEncodingJSON(t, newList(toNodes(testNodes()), "7"))
	sameAsEncodingJSON(t, list[nodeJSON]{})
	sameAsEncodingJSON(t, newList([]commentJSON{{ID: "<&>", Body: awkward[4], CreatedAt: Time(at)}}, ""))
}

// testEvents are events with every awkward string and the kinds of data
// the events carry (numbers, strings, nil, nested maps and lists), given as
// maps and built already encoded.
func testEvents() []records.Event {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.FixedZone("X", 3600))
	var evs []records.Event
	for i, s := range awkward {
		ev := records.Event{Tenant: "acme", Seq: uint64(i) << 50, At: at.Add(time.Duration(i) * time.Hour * 9000), Type: records.EventType(s), NodeID: s, By: s}
		switch i % 4 {
		case 0:
			ev.Data = records.DataOf(map[string]any{"fence": uint64(1) << 63, "holder": s, "attempt": int64(i), "error": nil})
		case 1:
			ev.Data = records.DataOf(map[string]any{"usage": map[string]any{"tokens": 1.5e21, "<": []any{s, true}}, "pct": 0.000001})
		case 2:
			ev.Data = records.DataOf(map[string]any{})
		case 3:
			ev.Data = records.Data().Uint("fence", 1<<63).Str(s, s).Int("attempt", -int64(i)).StrOrNull("session", "").Bool("capped", true).Done()
		}
		evs = append(evs, ev)
	}
	return evs
}

func TestEventAppendersMatchEncodingJSON(t *testing.T) {
	evs := testEvents()
	for _, ev := range evs {
		e := toEvent(ev)
		sameAsEncodingJSON(t, &e)
		raw := eventJSON{Seq: ev.Seq, Type: ev.Type}
		sameAsEncodingJSON(t, &raw) // data nil: null
	}
	sameAsEncodingJSON(t, eventList(evs))
	sameAsEncodingJSON(t, eventList(nil))
	sameAsEncodingJSON(t, list[eventJSON]{})
}

// The event stream's messages are what they were when encoding/json wrote
// their data.
func TestEventMessageMatchesEncodingJSON(t *testing.T) {
	for _, ev := range testEvents() {
		data, err := json.Marshal(toEvent(ev))
		require.NoError(t, err)
		want := fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, data)
		got, err := appendEventMessage([]byte("before\n"), ev)
		require.NoError(t, err)
		require.Equal(t, "before\n"+want, string(got))
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range awkward {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendString(nil, s)))
	})
}

func FuzzAppendRaw(f *testing.F) {
	for _, s := range []string{`null`, `{"ok":true}`, ` [1, 2 ] `, `"<&>"`, "\"\u2028\"", `{"a":{"b":[null,1e5,-0.5]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		want, err := json.Marshal(json.RawMessage(s))
		require.NoError(t, err)
		got, err := appendRaw(nil, json.RawMessage(s))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}

func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, 5e-324, 1.7976931348623157e308} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if !simpleValue(v) {
			return
		}
		want, err := json.Marshal(v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendFloat(nil, v)))
	})
}

func FuzzAppendTime(f *testing.F) {
	for _, v := range []int64{0, -1, 1, 1e18, -62135596800000, 253402300799999, 253402300800000, 1767225600123} {
		f.Add(v, int64(0))
	}
	f.Fuzz(func(t *testing.T, ms, ns int64) {
		v := Time(time.UnixMilli(ms).Add(time.Duration(ns % 1e9)))
		want, err := v.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendTime(nil, v)))
	})
}
