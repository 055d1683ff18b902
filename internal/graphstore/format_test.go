package graphstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tinylib/msgp/msgp"

	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// setMarker writes (or, for a nil val, deletes) one key of a closed store.
func setMarker(t *testing.T, dir string, key, val []byte) {
	t.Helper()
	rawUpdate(t, dir, func(tx *kv.Txn) error {
		if val == nil {
			return tx.Delete(key)
		}
		return tx.Set(key, val)
	})
}

// rawUpdate runs fn on the records of the closed store in dir, under the
// graph.
func rawUpdate(t *testing.T, dir string, fn func(tx *kv.Txn) error) {
	t.Helper()
	db, err := kv.Open(kv.Options{Dir: dir})
	require.NoError(t, err)
	db.Start()
	require.NoError(t, db.Update(context.Background(), fn))
	require.NoError(t, db.Close())
}

// rawNodes is every node record of the closed store in dir, by key.
func rawNodes(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	db, err := kv.Open(kv.Options{Dir: dir})
	require.NoError(t, err)
	defer db.Close()
	out := map[string][]byte{}
	require.NoError(t, db.View(func(tx *kv.Txn) error {
		return tx.Scan([]byte{records.TagNode, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
			out[string(key)] = append([]byte(nil), val...)
			return true, nil
		})
	}))
	return out
}

// reshaped is a stored tuple record with only its first keep fields, then
// extra (encoded fields a newer release appended), and then the event
// pointers the record carried: the record as a release whose struct has
// that many fields writes it, through the same codec.
func reshaped(t *testing.T, record []byte, keep uint32, extra ...[]byte) []byte {
	t.Helper()
	end, _ := recordPointers(record)
	n, body, err := msgp.ReadArrayHeaderBytes(record[:end])
	require.NoError(t, err)
	rest := body
	for i := uint32(0); i < min(keep, n); i++ {
		rest, err = msgp.Skip(rest)
		require.NoError(t, err)
	}
	out := msgp.AppendArrayHeader(nil, min(keep, n)+uint32(len(extra)))
	out = append(out, body[:len(body)-len(rest)]...)
	for _, e := range extra {
		out = append(out, e...)
	}
	return append(out, record[end:]...)
}

func nodeFields(t *testing.T) uint32 {
	t.Helper()
	return records.KnownFields()["node"]
}

// TestNodeRecordOfFormat5Reads: a node record the format-5 codec wrote
// (32 fields, then two event pointers; testdata/node-format5.hex) reads
// with the fields appended since zero, its pointers where they were.
func TestNodeRecordOfFormat5Reads(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/node-format5.hex")
	require.NoError(t, err)
	rec, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	n, _, err := msgp.ReadArrayHeaderBytes(rec)
	require.NoError(t, err)
	require.Equal(t, uint32(32), n, "the format-5 node record")
	require.Greater(t, nodeFields(t), n, "fields were appended since")

	var back records.Node
	rest, err := back.UnmarshalMsg(rec)
	require.NoError(t, err)
	require.Equal(t, typicalNodeRecord(), &back)
	require.Empty(t, back.Traceparent)
	tuple, _ := recordPointers(rec)
	require.Equal(t, tuple, len(rec)-len(rest), "the pointers follow the tuple")
	var seqs []uint64
	eachRecordPointer(rec, func(seq uint64) { seqs = append(seqs, seq) })
	require.Equal(t, []uint64{70, 77}, seqs)

	// Rewritten, it keeps its pointers and gains the appended fields.
	n2 := back
	n2.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	enc, err := n2.MarshalMsg(nil)
	require.NoError(t, err)
	again := withPointersOf(enc, rec)
	var back2 records.Node
	_, err = back2.UnmarshalMsg(again)
	require.NoError(t, err)
	require.Equal(t, &n2, &back2)
	seqs = nil
	eachRecordPointer(again, func(seq uint64) { seqs = append(seqs, seq) })
	require.Equal(t, []uint64{70, 77}, seqs)
}

// TestNodeRecordBeforeStartByReads: a node record of 33 fields (before
// start_by and the unique key were appended) reads with both zero, so it
// never lapses and holds no key; rewritten, it keeps its event pointers.
func TestNodeRecordBeforeStartByReads(t *testing.T) {
	t.Parallel()
	n := typicalNodeRecord()
	n.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	enc, err := n.MarshalMsg(nil)
	require.NoError(t, err)
	enc, _ = withRecordPointer(withPointersOf(enc, nil), 5, 0)
	older := reshaped(t, enc, 33)
	var back records.Node
	_, err = back.UnmarshalMsg(older)
	require.NoError(t, err)
	require.Nil(t, back.StartBy)
	require.Empty(t, back.UniqueKey)
	require.Equal(t, n, &back)
	require.False(t, back.Lapsed(time.Now()))

	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	back.StartBy, back.UniqueKey = &at, "report:may"
	enc, err = back.MarshalMsg(nil)
	require.NoError(t, err)
	again := withPointersOf(enc, older)
	var back2 records.Node
	_, err = back2.UnmarshalMsg(again)
	require.NoError(t, err)
	require.Equal(t, &back, &back2)
	var seqs []uint64
	eachRecordPointer(again, func(seq uint64) { seqs = append(seqs, seq) })
	require.Equal(t, []uint64{5}, seqs)
}

// TestNodeRecordWithAFieldMoreReads: a record a newer release wrote, with a
// field appended past the ones this release knows, decodes to the fields it
// knows (the codec skips the rest) and keeps its event pointers. The store
// never opens such a directory (TestOpenRefusesFieldsItDoesNotKnow); a
// record read while a newer release shares the store (etcd) still reads.
func TestNodeRecordWithAFieldMoreReads(t *testing.T) {
	t.Parallel()
	n := typicalNodeRecord()
	n.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	enc, err := n.MarshalMsg(nil)
	require.NoError(t, err)
	enc, _ = withRecordPointer(withPointersOf(enc, nil), 9, 0)
	future := reshaped(t, enc, nodeFields(t),
		msgp.AppendMapStrStr(nil, map[string]string{"cost": "high"}),
		msgp.AppendString(nil, "a string field"))
	count, _, err := msgp.ReadArrayHeaderBytes(future)
	require.NoError(t, err)
	require.Equal(t, nodeFields(t)+2, count)

	var back records.Node
	rest, err := back.UnmarshalMsg(future)
	require.NoError(t, err)
	require.Equal(t, n, &back)
	tuple, _ := recordPointers(future)
	require.Equal(t, tuple, len(future)-len(rest))
	var seqs []uint64
	eachRecordPointer(future, func(seq uint64) { seqs = append(seqs, seq) })
	require.Equal(t, []uint64{9}, seqs)
}

// TestOpenFormat5StoreWithoutMigration: a store whose node records have the
// fields format 5 wrote, and no fields marker, opens as it is: no record is
// rewritten, the nodes read with the appended fields zero, and only the
// markers change.
func TestOpenFormat5StoreWithoutMigration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	a, b := newNode("acme", "a", 1), newNode("acme", "b", 2)
	a.Props = map[string]any{"traceparent": "a user's own prop"}
	insert(t, s, a)
	insert(t, s, b)
	require.NoError(t, s.Close())

	// Make it the store format 5 left: 32-field node records, marker 5.
	old := map[string][]byte{}
	stored := rawNodes(t, dir)
	for key, val := range stored {
		old[key] = reshaped(t, val, 32)
		require.Less(t, len(old[key]), len(val))
	}
	rawUpdate(t, dir, func(tx *kv.Txn) error {
		for key, val := range old {
			if err := tx.Set([]byte(key), val); err != nil {
				return err
			}
		}
		if err := tx.Set(records.FormatKey, []byte("5")); err != nil {
			return err
		}
		return tx.Delete(records.FieldsKey)
	})

	s, err = Open(Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s.View(func(tx *Tx) error {
		got, err := tx.NodeGet("acme", "a")
		require.NoError(t, err)
		require.Empty(t, got.Traceparent)
		require.Equal(t, map[string]any{"traceparent": "a user's own prop"}, got.Props)
		got, err = tx.NodeGet("acme", "b")
		require.NoError(t, err)
		require.Equal(t, int64(2), got.Priority)
		return nil
	}))
	require.NoError(t, s.Close())
	require.Equal(t, old, rawNodes(t, dir), "opening rewrote no record")

	rep, err := Check(dir)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	require.Equal(t, records.FormatVersion, rep.Format)
	db, err := kv.Open(kv.Options{Dir: dir})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.View(func(tx *kv.Txn) error {
		f, _, err := tx.Get(records.FormatKey)
		require.NoError(t, err)
		require.Equal(t, "6", string(f))
		raw, ok, err := tx.Get(records.FieldsKey)
		require.NoError(t, err)
		require.True(t, ok)
		fields, err := records.DecodeFields(raw)
		require.NoError(t, err)
		require.Equal(t, records.KnownFields(), fields)
		return nil
	}))
}

// TestOpenRefusesFieldsItDoesNotKnow: a store a newer release of the same
// format opened, and wrote a node field more into, is refused with both
// field counts named, before any record is read; so is a marker naming a
// record this release does not know. Without the marker, the record reads.
func TestOpenRefusesFieldsItDoesNotKnow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	insert(t, s, newNode("acme", "a", 0))
	require.NoError(t, s.Close())

	mine := nodeFields(t)
	stored := rawNodes(t, dir)
	rawUpdate(t, dir, func(tx *kv.Txn) error {
		for key, val := range stored {
			if err := tx.Set([]byte(key), reshaped(t, val, mine, msgp.AppendInt64(nil, 7))); err != nil {
				return err
			}
		}
		fields := records.KnownFields()
		fields["node"] = mine + 1
		return tx.Set(records.FieldsKey, records.EncodeFields(fields))
	})
	_, err = Open(Options{Dir: dir})
	require.ErrorContains(t, err, "was written by a newer release")
	require.ErrorContains(t, err, "store format 6")
	want := fmt.Sprintf("node records of %d fields, and this release knows %d", mine+1, mine)
	require.ErrorContains(t, err, want)
	_, err = Check(dir)
	require.ErrorContains(t, err, want)

	fields := records.KnownFields()
	fields["gizmo"] = 3
	setMarker(t, dir, records.FieldsKey, records.EncodeFields(fields))
	_, err = Open(Options{Dir: dir})
	require.ErrorContains(t, err, "gizmo records, which this release does not know")

	// The marker is the guard: the record itself decodes.
	setMarker(t, dir, records.FieldsKey, nil)
	s, err = Open(Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s.View(func(tx *Tx) error {
		n, err := tx.NodeGet("acme", "a")
		require.NoError(t, err)
		require.Equal(t, "a", n.ID)
		return nil
	}))
	require.NoError(t, s.Close())
}
