package api

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tether-run/tether/internal/records"
)

// The hot answers (a node, a lease, a claim, a completion, a batch's
// results) are written by hand-rolled appenders instead of encoding/json's
// reflection: the same bytes, without its per-field work and allocations.
// Every appender's output is byte for byte what encoding/json writes for the
// same value (HTML-safe escaping, RawMessage compacted, nil slices and maps
// as null); encode_test.go holds them to that. The appenders of the DTOs
// that only list fields (a node, a lease, an edge) are generated from the
// DTO's fields into encode_gen.go, so a field added to one needs no line
// here. Values of no fixed shape
// (props and usage of other kinds of values, NaN) go through json.Marshal.

//go:generate go run ../cmd/tether-appendgen -in dto.go -out encode_gen.go nodeJSON leaseJSON edgeJSON

// jsonAppender is an answer that appends its own JSON encoding to b.
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, error)
}

// answerBuffers recycles the buffers answers are encoded into.
var answerBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledAnswer is the largest buffer put back into answerBuffers: a
// huge answer's buffer is left to the collector.
const maxPooledAnswer = 1 << 20

// writeAppender answers v as JSON with status, as json.Encoder would (a
// newline after the value).
func writeAppender(w interface {
	Write([]byte) (int, error)
}, v jsonAppender) error {
	bp := answerBuffers.Get().(*[]byte)
	b, err := v.appendJSON((*bp)[:0])
	if err == nil {
		b = append(b, '\n')
		_, err = w.Write(b)
	}
	if cap(b) <= maxPooledAnswer {
		*bp = b[:0]
		answerBuffers.Put(bp)
	}
	return err
}

// appendString appends s as a JSON string, escaped as encoding/json does
// by default: HTML-safe, invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendStringPtr appends *s, or null.
func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendStrings appends a string array (null when nil).
func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

func appendBool(b []byte, v bool) []byte { return strconv.AppendBool(b, v) }

// appendTime appends t as Time.MarshalJSON does, digit by digit for the
// years 0 to 9999 (AppendFormat's layout walk is most of its cost).
func appendTime(b []byte, t Time) []byte {
	u := time.Time(t).UTC()
	year, month, day := u.Date()
	if year < 0 || year > 9999 {
		b = append(b, '"')
		b = u.AppendFormat(b, timeLayout)
		return append(b, '"')
	}
	hour, minute, sec := u.Clock()
	ms := u.Nanosecond() / int(time.Millisecond)
	return append(b, '"',
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', '"')
}

func appendTimePtr(b []byte, t *Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendTime(b, *t)
}

// appendMarshal appends json.Marshal(v): for values of no fixed shape.
func appendMarshal(b []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	return append(b, out...), err
}

// appendRaw appends a json.RawMessage as encoding/json does: null when
// nil, otherwise compacted and HTML-escaped.
func appendRaw(b []byte, m json.RawMessage) ([]byte, error) {
	if m == nil || string(m) == "null" {
		return append(b, "null"...), nil
	}
	if isPlainCompact(m) {
		return append(b, m...), nil
	}
	return appendMarshal(b, m)
}

// isPlainCompact reports whether m needs neither compaction nor escaping:
// no white space outside strings, nothing HTML escaping changes, no U+2028
// or U+2029. It errs on the side of false (a space inside a string).
func isPlainCompact(m []byte) bool {
	for _, c := range m {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return false
		}
	}
	return json.Valid(m)
}

// appendMap appends a map of no fixed shape: null when nil, {} when
// empty, keys sorted as encoding/json sorts them. Values of the kinds the
// records hold (nil, strings, booleans, integers, finite floats) are
// appended here; a map holding anything else goes through json.Marshal.
func appendMap[M ~map[string]V, V any](b []byte, m M) ([]byte, error) {
	switch {
	case m == nil:
		return append(b, "null"...), nil
	case len(m) == 0:
		return append(b, "{}"...), nil
	case len(m) > 8:
		return appendMarshal(b, m)
	}
	var buf [8]string
	keys := buf[:0]
	for k, v := range m {
		if !simpleValue(v) {
			return appendMarshal(b, m)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendSimple(b, m[k])
	}
	return append(b, '}'), nil
}

// simpleValue reports whether appendSimple writes v.
func simpleValue(v any) bool {
	switch v := v.(type) {
	case nil, string, bool, int, int64, uint64:
		return true
	case float64:
		return !math.IsInf(v, 0) && !math.IsNaN(v)
	}
	return false
}

func appendSimple(b []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		return appendString(b, v)
	case bool:
		return strconv.AppendBool(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case uint64:
		return strconv.AppendUint(b, v, 10)
	case float64:
		return appendFloat(b, v)
	}
	return append(b, "null"...)
}

// appendFloat appends a finite f as encoding/json does: like ES6's number
// to string conversion.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendBackoff appends a retry backoff.
func appendBackoff(b []byte, bo *records.Backoff) ([]byte, error) {
	if bo == nil {
		return append(b, "null"...), nil
	}
	if !simpleValue(bo.Factor) {
		return appendMarshal(b, bo)
	}
	b = append(b, `{"initial_ms":`...)
	b = strconv.AppendInt(b, bo.InitialMS, 10)
	b = append(b, `,"max_ms":`...)
	b = strconv.AppendInt(b, bo.MaxMS, 10)
	b = append(b, `,"factor":`...)
	b = appendFloat(b, bo.Factor)
	return append(b, '}'), nil
}

func (p *progressJSON) appendJSON(b []byte) ([]byte, error) {
	if p == nil {
		return append(b, "null"...), nil
	}
	b = append(b, `{"pct":`...)
	var err error
	switch {
	case p.Pct == nil:
		b = append(b, "null"...)
	case simpleValue(*p.Pct):
		b = appendFloat(b, *p.Pct)
	default:
		if b, err = appendMarshal(b, *p.Pct); err != nil {
			return b, err
		}
	}
	b = append(b, `,"message":`...)
	b = appendStringPtr(b, p.Message)
	b = append(b, `,"updated_at":`...)
	b = appendTime(b, p.UpdatedAt)
	return append(b, '}'), nil
}

// appendCapped appends the fields of c that are set (both omitempty).
func appendCapped(b []byte, c capped) []byte {
	if c.CappedToMax {
		b = append(b, `,"capped_to_max":true`...)
	}
	if c.ClaimTTLMaxMS != 0 {
		b = append(b, `,"claim_ttl_max_ms":`...)
		b = strconv.AppendInt(b, c.ClaimTTLMaxMS, 10)
	}
	return b
}

func (a *claimAnswer) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"ok":`...)
	b = appendBool(b, a.OK)
	b = append(b, `,"status":`...)
	b = appendString(b, string(a.Status))
	b = append(b, `,"renewed":`...)
	b = appendBool(b, a.Renewed)
	b = append(b, `,"lease":`...)
	if b, err = a.Lease.appendJSON(b); err != nil {
		return b, err
	}
	b = append(b, `,"edge":`...)
	if b, err = a.Edge.appendJSON(b); err != nil {
		return b, err
	}
	b = append(b, `,"node":`...)
	if b, err = a.Node.appendJSON(b); err != nil {
		return b, err
	}
	b = appendCapped(b, a.capped)
	return append(b, '}'), nil
}

func (a *nodeAnswer) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"ok":`...)
	b = appendBool(b, a.OK)
	b = append(b, `,"status":`...)
	b = appendString(b, string(a.Status))
	b = append(b, `,"node":`...)
	b, err := a.Node.appendJSON(b)
	if err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

func (a *completeNextAnswer) appendJSON(b []byte) ([]byte, error) {
	b, err := a.nodeAnswer.appendJSON(b)
	if err != nil {
		return b, err
	}
	b = append(b[:len(b)-1], `,"next":`...)
	if a.Next == nil {
		b = append(b, "null"...)
	} else if b, err = a.Next.appendJSON(b); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

func (a *renewAnswer) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"ok":`...)
	b = appendBool(b, a.OK)
	b = append(b, `,"status":`...)
	b = appendString(b, string(a.Status))
	b = append(b, `,"lease":`...)
	b, err := a.Lease.appendJSON(b)
	if err != nil {
		return b, err
	}
	b = append(b, `,"inbox_unread":`...)
	b = strconv.AppendInt(b, a.InboxUnread, 10)
	return append(b, '}'), nil
}

// claimedJSON is one item of POST /v1/queues/{queue}/claims.
type claimedJSON struct {
	Lease leaseJSON `json:"lease"`
	Node  nodeJSON  `json:"node"`
}

// claimedList is the answer of POST /v1/queues/{queue}/claims.
type claimedList struct {
	Items []claimedJSON `json:"items"`
}

func (l *claimedList) appendJSON(b []byte) ([]byte, error) {
	if l.Items == nil {
		return append(b, `{"items":null}`...), nil
	}
	b = append(b, `{"items":[`...)
	var err error
	for i := range l.Items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"lease":`...)
		if b, err = l.Items[i].Lease.appendJSON(b); err != nil {
			return b, err
		}
		b = append(b, `,"node":`...)
		if b, err = l.Items[i].Node.appendJSON(b); err != nil {
			return b, err
		}
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

// batchResults is the answer of POST /v1/batch.
type batchResults struct {
	Results []batchResult `json:"results"`
}

func (r *batchResults) appendJSON(b []byte) ([]byte, error) {
	if r.Results == nil {
		return append(b, `{"results":null}`...), nil
	}
	b = append(b, `{"results":[`...)
	var err error
	for i, res := range r.Results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendString(b, res.ID)
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(res.Status), 10)
		b = append(b, `,"body":`...)
		switch body := res.Body.(type) {
		case nil:
			b = append(b, "null"...)
		case jsonAppender:
			b, err = body.appendJSON(b)
		default:
			b, err = appendMarshal(b, body)
		}
		if err != nil {
			return b, err
		}
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

func (e *eventJSON) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"at":`...)
	b = appendTime(b, e.At)
	b = append(b, `,"type":`...)
	b = appendString(b, string(e.Type))
	b = append(b, `,"node_id":`...)
	b = appendString(b, e.NodeID)
	b = append(b, `,"by":`...)
	b = appendString(b, e.By)
	b = append(b, `,"data":`...)
	b, err := appendMap(b, e.Data)
	if err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// appendJSON writes a page whose items have appenders of their own (nodes,
// edges, events) item by item; a page of any other items goes through
// json.Marshal whole.
func (l list[T]) appendJSON(b []byte) ([]byte, error) {
	if _, ok := any((*T)(nil)).(jsonAppender); !ok {
		return appendMarshal(b, l)
	}
	if l.Items == nil {
		b = append(b, `{"items":null`...)
	} else {
		b = append(b, `{"items":[`...)
		var err error
		for i := range l.Items {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = any(&l.Items[i]).(jsonAppender).appendJSON(b); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"next_cursor":`...)
	b = appendStringPtr(b, l.NextCursor)
	return append(b, '}'), nil
}

// appendEventMessage appends ev as one server-sent event: its seq as the
// id, its type as the event, its JSON as the data.
func appendEventMessage(b []byte, ev records.Event) ([]byte, error) {
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, ev.Seq, 10)
	b = append(b, "\nevent: "...)
	b = append(b, ev.Type...)
	b = append(b, "\ndata: "...)
	e := toEvent(ev)
	b, err := e.appendJSON(b)
	if err != nil {
		return b, err
	}
	return append(b, "\n\n"...), nil
}
