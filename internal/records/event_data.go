package records

import (
	"encoding/json"

	"github.com/tinylib/msgp/msgp"
)

// EventData is an event's data: string keys to JSON-like values, stored as
// one MessagePack map inside the event's record (the same bytes a
// map[string]any encodes to, so the format does not depend on which form
// made it).
//
// The writer's hot paths (a claim, a renewal, a completion, a release, an
// expiry, a comment, an edge added or retired) build it key by key with
// Data, already encoded: no map, no boxed values, and the event group's
// encoding copies the bytes. Everything else gives a map (DataOf). A record read back holds the decoded map. Readers
// take the map from Map. EventData is not in records.go, so msgp calls the
// methods below instead of generating its own.
type EventData struct {
	raw []byte         // the encoded map (built by Data)
	m   map[string]any // the map (given to DataOf, or decoded)
}

// DataOf is the event data m. m becomes the event's: the caller does not
// change it afterwards.
func DataOf(m map[string]any) EventData { return EventData{m: m} }

// Map returns the data as a map (never nil). A map given to DataOf, or
// decoded from a record, is returned itself; the caller does not change it.
func (d EventData) Map() map[string]any {
	if d.m != nil {
		return d.m
	}
	if len(d.raw) == 0 {
		return map[string]any{}
	}
	m, _, err := msgp.ReadMapStrIntfBytes(d.raw, nil)
	if err != nil {
		// Data encoded what it was given with msgp's own appenders, so
		// this cannot happen; an empty map beats a nil one to a caller.
		return map[string]any{}
	}
	return m
}

// Get returns the value under key (nil when there is none).
func (d EventData) Get(key string) any { return d.Map()[key] }

// MarshalMsg appends the data as a MessagePack map.
func (d EventData) MarshalMsg(b []byte) ([]byte, error) {
	if d.raw != nil {
		return append(b, d.raw...), nil
	}
	return msgp.AppendMapStrIntf(b, d.m)
}

// UnmarshalMsg reads a MessagePack map into d's map: a record read back is
// decoded (and checked) whole, as it was when Data was a map field.
func (d *EventData) UnmarshalMsg(b []byte) ([]byte, error) {
	m, rest, err := msgp.ReadMapStrIntfBytes(b, nil)
	if err != nil {
		return b, err
	}
	*d = EventData{m: m}
	return rest, nil
}

// Msgsize bounds the encoded size (exact for data built by Data).
func (d EventData) Msgsize() int {
	if d.raw != nil {
		return len(d.raw)
	}
	s := msgp.MapHeaderSize
	for k, v := range d.m {
		s += msgp.StringPrefixSize + len(k) + msgp.GuessSize(v)
	}
	return s
}

// MarshalJSON writes the data as a JSON object (for tests and tools that
// marshal events with encoding/json; the API has its own appender).
func (d EventData) MarshalJSON() ([]byte, error) { return json.Marshal(d.Map()) }

// UnmarshalJSON reads a JSON object.
func (d *EventData) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*d = EventData{m: m}
	return nil
}

// maxDataKeys is how many keys Data takes: the map's header is one byte
// (a fixmap), counted up as keys are added.
const maxDataKeys = 15

// DataBuilder builds an EventData key by key, encoding each value with the
// appender msgp's map encoding would use for its Go type, so the bytes (and
// what a reader decodes) are those of the equivalent map. Keys are distinct
// and at most maxDataKeys; every caller passes constant keys. A builder is a
// chain: each method returns the builder to go on with, sharing its bytes,
// so the one before it is not used again (nor is one after Done).
type DataBuilder struct{ b []byte }

// Data starts an event's data.
func Data() DataBuilder { return DataBuilder{b: append(make([]byte, 0, 96), 0x80)} }

func (d DataBuilder) key(k string) DataBuilder {
	if d.b[0]&0x0f == maxDataKeys {
		panic("records: an event's data takes at most 15 keys")
	}
	d.b[0]++
	d.b = msgp.AppendString(d.b, k)
	return d
}

// Uint adds k: v (a uint64).
func (d DataBuilder) Uint(k string, v uint64) DataBuilder {
	d = d.key(k)
	d.b = msgp.AppendUint64(d.b, v)
	return d
}

// Int adds k: v (an int64).
func (d DataBuilder) Int(k string, v int64) DataBuilder {
	d = d.key(k)
	d.b = msgp.AppendInt64(d.b, v)
	return d
}

// Str adds k: v.
func (d DataBuilder) Str(k, v string) DataBuilder {
	d = d.key(k)
	d.b = msgp.AppendString(d.b, v)
	return d
}

// StrOrNull adds k: v, or k: null when v is empty.
func (d DataBuilder) StrOrNull(k, v string) DataBuilder {
	if v == "" {
		return d.Null(k)
	}
	return d.Str(k, v)
}

// Bool adds k: v.
func (d DataBuilder) Bool(k string, v bool) DataBuilder {
	d = d.key(k)
	d.b = msgp.AppendBool(d.b, v)
	return d
}

// Null adds k: null.
func (d DataBuilder) Null(k string) DataBuilder {
	d = d.key(k)
	d.b = msgp.AppendNil(d.b)
	return d
}

// Done is the data built.
func (d DataBuilder) Done() EventData { return EventData{raw: d.b} }
