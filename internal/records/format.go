package records

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tinylib/msgp/msgp"

	"github.com/tether-run/tether/internal/kv"
)

// FormatVersion is the version of the store's records and key layout.
//
//	1: JSON records with durable indexes (Tether before the binary codec).
//	2: MessagePack records (records.go), indexes in memory, events grouped
//	   per transaction.
//	3: node records end with the blobs they reference; blob records.
//	4: a node record may carry pointers to its event groups after its
//	   fields (node_events.go) instead of pointer keys.
//	5: the records other packages own (tenants, API keys, workers,
//	   messages, schedules and their runs) are MessagePack too, in their
//	   owners' generated codecs, instead of JSON (foreign.go).
//	6: the graph's tuples have a variable length: a record with fewer
//	   fields than its type reads the missing ones as zero, so a field is
//	   appended without a new format (records.go); the fields marker holds
//	   how many fields the newest release that opened the store wrote. The
//	   node record's 33rd field is its trace context.
//
// docs/upgrades.md is the policy: which formats a release opens, and what
// an older release does with a newer store.
const FormatVersion = 6

// OpensFrom is the oldest format this release opens. A format-5 store is a
// format-6 one whose records all have the fields format 5 knew, so opening
// it rewrites no record: only the markers. Formats 3 and 4 held the other
// packages' records as JSON; the release that writes format 5 recodes them.
const OpensFrom = 5

var (
	// FormatKey is the store format version, outside every tenant.
	FormatKey = []byte{0x01, 'f', 'o', 'r', 'm', 'a', 't'}
	// FieldsKey is the fields marker: a MessagePack map from each tuple
	// record's name (tupleRecords) to the most fields a release that opened
	// the store writes in it. A release that knows fewer fields of a record
	// than the marker says refuses the store, since it would drop the
	// fields it does not know from every record it rewrites.
	FieldsKey = []byte{0x01, 'f', 'i', 'e', 'l', 'd', 's'}
)

// tupleRecords are the graph's records encoded as tuples (records.go), by
// their names in the fields marker, each with a zero value to count its
// fields by.
func tupleRecords() []struct {
	name string
	zero msgp.Marshaler
} {
	return []struct {
		name string
		zero msgp.Marshaler
	}{
		{"node", &Node{}}, {"edge", &Edge{}}, {"live_edge", &LiveEdgeRecord{}},
		{"event", &Event{}}, {"event_group", &EventGroup{}}, {"comment", &Comment{}},
		{"lease", &Lease{}}, {"progress", &Progress{}}, {"run_end", &RunEnd{}},
		{"backoff", &Backoff{}}, {"queue_settings", &QueueSettings{}},
		{"idempotency", &IdempotencyRecord{}}, {"blob", &BlobRecord{}},
		{"limit", &LimitRecord{}}, {"budget", &BudgetRecord{}},
	}
}

// KnownFields is how many fields this release writes in each tuple record.
func KnownFields() map[string]uint32 {
	out := map[string]uint32{}
	for _, r := range tupleRecords() {
		b, err := r.zero.MarshalMsg(nil)
		if err != nil {
			panic(err) // a zero value always encodes
		}
		n, _, err := msgp.ReadArrayHeaderBytes(b)
		if err != nil {
			panic(err)
		}
		out[r.name] = n
	}
	return out
}

// StoredFormat is what a data directory's markers say.
type StoredFormat struct {
	Version int               // 0 for a fresh (empty) store
	Fields  map[string]uint32 // nil when the store has no fields marker (format 5)
}

// ReadFormat reads the format of the data directory dir that db holds:
// version 0 for a fresh (empty) store, which takes the current one. A format
// this release does not open, and a store a newer release wrote fields into
// that this one does not know, are refused with both versions named.
func ReadFormat(db *kv.Store, dir string) (stored StoredFormat, err error) {
	err = db.View(func(tx *kv.Txn) error {
		b, ok, err := tx.Get(FormatKey)
		if err != nil {
			return err
		}
		if !ok {
			empty := true
			if err := tx.Scan(nil, nil, false, false, func(_, _ []byte) (bool, error) {
				empty = false
				return false, nil
			}); err != nil {
				return err
			}
			if !empty {
				return fmt.Errorf("the data directory %s holds store format 1 (JSON records, before the binary codec), and this release opens formats %d to %d: it cannot be upgraded in place; export what you need with the release that wrote it, or start from an empty directory", dir, OpensFrom, FormatVersion)
			}
			return nil
		}
		v, err := strconv.Atoi(string(b))
		switch {
		case err != nil:
			return fmt.Errorf("the data directory %s holds a store format marker this release cannot read (%q), and this release opens formats %d to %d", dir, b, OpensFrom, FormatVersion)
		case v > FormatVersion:
			return fmt.Errorf("the data directory %s holds store format %d, written by a newer release, and this release opens formats %d to %d: run the newer release on it, or start from an empty directory", dir, v, OpensFrom, FormatVersion)
		case v < OpensFrom:
			return fmt.Errorf("the data directory %s holds store format %d, and this release opens formats %d to %d: open it once with the previous release (it writes format %d, migrating formats 3 and 4), then with this one", dir, v, OpensFrom, FormatVersion, OpensFrom)
		}
		stored.Version = v
		b, ok, err = tx.Get(FieldsKey)
		if err != nil || !ok {
			return err
		}
		if stored.Fields, err = DecodeFields(b); err != nil {
			return fmt.Errorf("the data directory %s holds a fields marker this release cannot read: %w", dir, err)
		}
		return newerFields(dir, stored)
	})
	return stored, err
}

// newerFields refuses a store whose fields marker names a record this
// release knows fewer fields of, or does not know at all.
func newerFields(dir string, stored StoredFormat) error {
	known := KnownFields()
	names := make([]string, 0, len(stored.Fields))
	for name := range stored.Fields {
		names = append(names, name)
	}
	sort.Strings(names)
	var newer []string
	for _, name := range names {
		n := stored.Fields[name]
		switch mine, ok := known[name]; {
		case !ok:
			newer = append(newer, fmt.Sprintf("%s records, which this release does not know", name))
		case n > mine:
			newer = append(newer, fmt.Sprintf("%s records of %d fields, and this release knows %d", name, n, mine))
		}
	}
	if len(newer) == 0 {
		return nil
	}
	return fmt.Errorf("the data directory %s (store format %d) was written by a newer release: it holds %s; this release, of store format %d, would drop what it does not know: run the newer release on it, or start from an empty directory", dir, stored.Version, strings.Join(newer, "; "), FormatVersion)
}

// DecodeFields reads a fields marker.
func DecodeFields(b []byte) (map[string]uint32, error) {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint32, n)
	for ; n > 0; n-- {
		var k string
		var v uint32
		if k, b, err = msgp.ReadStringBytes(b); err != nil {
			return nil, err
		}
		if v, b, err = msgp.ReadUint32Bytes(b); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// EncodeFields writes a fields marker, its names sorted.
func EncodeFields(fields map[string]uint32) []byte {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	b := msgp.AppendMapHeader(nil, uint32(len(names)))
	for _, name := range names {
		b = msgp.AppendUint32(msgp.AppendString(b, name), fields[name])
	}
	return b
}

// WriteFormat brings db's markers up to this release: its format version
// and its fields (ReadFormat refused a store whose marker says more). It
// writes nothing when they say so already, and reports whether it wrote.
func WriteFormat(db *kv.Store, stored StoredFormat) (bool, error) {
	fields := KnownFields()
	same := stored.Version == FormatVersion && len(stored.Fields) == len(fields)
	for name, n := range stored.Fields {
		if n != fields[name] {
			same = false
		}
	}
	if same {
		return false, nil
	}
	return true, db.Update(context.Background(), func(tx *kv.Txn) error {
		if err := tx.Set(FormatKey, []byte(strconv.Itoa(FormatVersion))); err != nil {
			return err
		}
		return tx.Set(FieldsKey, EncodeFields(fields))
	})
}
