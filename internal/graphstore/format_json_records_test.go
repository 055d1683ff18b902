package graphstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tinylib/msgp/msgp"

	"github.com/tether-run/tether/internal/etcdtest"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// jsonRecord is one record as formats 3 and 4 stored it.
type jsonRecord struct {
	key  []byte
	json string
	ttl  time.Duration // 0: none
}

// writeFormat4 makes the store behind s what format 4 wrote: the records
// stored as JSON, and the format record 4. It is the old write path
// (Tx.setJSON: json.Marshal, then Set or SetTTL) kept for this test.
func writeFormat4(t *testing.T, s *Store, recs []jsonRecord) {
	t.Helper()
	for i := 0; i < len(recs); i += 200 {
		chunk := recs[i:min(i+200, len(recs))]
		require.NoError(t, s.kv.Update(context.Background(), func(tx *kv.Txn) error {
			for _, r := range chunk {
				var v map[string]any
				if err := json.Unmarshal([]byte(r.json), &v); err != nil {
					return err
				}
				b, err := json.Marshal(v)
				if err != nil {
					return err
				}
				if r.ttl > 0 {
					err = tx.SetTTL(r.key, b, r.ttl)
				} else {
					err = tx.Set(r.key, b)
				}
				if err != nil {
					return err
				}
			}
			return nil
		}))
	}
	require.NoError(t, s.kv.Update(context.Background(), func(tx *kv.Txn) error { return tx.Set(records.FormatKey, []byte("4")) }))
}

// mapFromJSON stands in for an owner's FromJSON: a JSON object as a
// MessagePack map.
func mapFromJSON(raw []byte) ([]byte, error) {
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return msgp.AppendMapStrIntf(nil, v)
}

func allRecoders(f FromJSON) Recoders {
	return Recoders{Tenant: f, APIKey: f, Worker: f, Message: f, Schedule: f, ScheduleRun: f}
}

// format4Records are one record of every kind another package owns, and
// n run records of one schedule (more than a recoding batch).
func format4Records(n int) []jsonRecord {
	recs := []jsonRecord{
		{key: records.TenantKey("acme"), json: `{"id":"acme","policy":{"retention_ms":5}}`},
		{key: records.APIKeyKey("acme", "k1"), json: `{"id":"k1","sub":"bot","roles":["worker"],"secret_sha256":"ab"}`},
		{key: records.WorkerKey("acme", "alice", "w1"), json: `{"by":"alice","worker":"w1","meta":{"pid":42}}`, ttl: 24 * time.Hour},
		{key: records.MessageKey("acme", "m1"), json: `{"id":"m1","to":"alice","body":"hi"}`},
		{key: records.MessageKey("acme", "m2"), json: `{"id":"m2","to":"alice","body":"read"}`, ttl: 7 * 24 * time.Hour},
		{key: records.ScheduleKey("acme", "s"), json: `{"id":"s","template":{"type":"t","props":{"k":[1,"x"]}}}`},
	}
	for i := range n {
		recs = append(recs, jsonRecord{key: records.ScheduleRunKey("acme", "s", uint64(i+1)), json: fmt.Sprintf(`{"seq":%d,"trigger":"manual"}`, i+1)})
	}
	return recs
}

type storedRecord struct {
	val       []byte
	expiresAt uint64
}

func storedRecords(t *testing.T, s *Store, recs []jsonRecord) map[string]storedRecord {
	t.Helper()
	out := map[string]storedRecord{}
	require.NoError(t, s.kv.View(func(tx *kv.Txn) error {
		for _, r := range recs {
			if err := tx.ScanExpiry(r.key[:len(r.key)-1], nil, func(key, val []byte, exp uint64) (bool, error) {
				if string(key) == string(r.key) {
					out[string(key)] = storedRecord{val, exp}
				}
				return true, nil
			}); err != nil {
				return err
			}
		}
		return nil
	}))
	return out
}

func storedFormat(t *testing.T, s *Store) string {
	t.Helper()
	var f string
	require.NoError(t, s.kv.View(func(tx *kv.Txn) error {
		b, _, err := tx.Get(records.FormatKey)
		f = string(b)
		return err
	}))
	return f
}

// engineCase opens one store, again and again, on one engine.
type engineCase struct {
	name string
	open func(t *testing.T, r Recoders) (*Store, error)
}

func recodingEngines(t *testing.T) []engineCase {
	dir := t.TempDir()
	var etcd *etcdtest.Cluster
	return []engineCase{
		{"badger", func(t *testing.T, r Recoders) (*Store, error) { return Open(Options{Dir: dir, Recoders: r}) }},
		{"etcd", func(t *testing.T, r Recoders) (*Store, error) {
			if etcd == nil {
				etcd = etcdtest.Start(t, 1)
			}
			db, err := kv.OpenEtcd(kv.EtcdOptions{Client: etcd.Client(), Prefix: etcd.Prefix() + "graph/"})
			if err != nil {
				return nil, err
			}
			return Open(Options{Dir: "etcd", KV: db, Recoders: r})
		}},
	}
}

// TestAFormat4StoresJSONRecordsAreRecoded: opening a format-4 store
// rewrites every JSON record of another package's kinds with its owner's
// recoder, keeps each key's expiry, and bumps the format; on Badger and on
// etcd alike (the migration only uses kv's transactions).
func TestAFormat4StoresJSONRecordsAreRecoded(t *testing.T) {
	t.Parallel()
	for _, ec := range recodingEngines(t) {
		t.Run(ec.name, func(t *testing.T) {
			s, err := ec.open(t, Recoders{})
			require.NoError(t, err)
			recs := format4Records(2*recodeBatch + 7)
			writeFormat4(t, s, recs)
			before := storedRecords(t, s, recs)
			require.Len(t, before, len(recs))
			require.NoError(t, s.Close())

			s, err = ec.open(t, allRecoders(mapFromJSON))
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint(records.FormatVersion), storedFormat(t, s))
			after := storedRecords(t, s, recs)
			require.Len(t, after, len(recs))
			for _, r := range recs {
				got := after[string(r.key)]
				want, err := mapFromJSON([]byte(r.json))
				require.NoError(t, err)
				wantMap, _, err := msgp.ReadMapStrIntfBytes(want, nil)
				require.NoError(t, err)
				gotMap, rest, err := msgp.ReadMapStrIntfBytes(got.val, nil)
				require.NoError(t, err, "%q", r.key)
				require.Empty(t, rest)
				require.Equal(t, wantMap, gotMap, "%q", r.key)
				require.Equal(t, before[string(r.key)].expiresAt, got.expiresAt, "%q keeps its expiry", r.key)
				require.Equal(t, r.ttl > 0, got.expiresAt > 0)
			}
			require.NoError(t, s.Close())
		})
	}
}

// TestAnInterruptedRecodingResumes: a recoding that fails half-way leaves
// the batches it wrote recoded and the rest JSON, and the format 4; the
// next open recodes only the rest, and bumps the format.
func TestAnInterruptedRecodingResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	recs := format4Records(recodeBatch + 100)
	writeFormat4(t, s, recs)
	require.NoError(t, s.Close())

	calls := 0
	failing := func(raw []byte) ([]byte, error) {
		if calls++; calls > 6+recodeBatch { // the six of the other kinds, then one batch of runs
			return nil, errors.New("disk on fire")
		}
		return mapFromJSON(raw)
	}
	_, err = Open(Options{Dir: dir, Recoders: allRecoders(failing)})
	require.ErrorContains(t, err, "disk on fire")
	require.ErrorContains(t, err, "from store format 4")

	calls = 0
	counting := func(raw []byte) ([]byte, error) {
		calls++
		return mapFromJSON(raw)
	}
	s, err = Open(Options{Dir: dir, Recoders: allRecoders(counting)})
	require.NoError(t, err)
	require.Equal(t, 100, calls, "the second open recoded only what the first had not")
	require.Equal(t, fmt.Sprint(records.FormatVersion), storedFormat(t, s))
	stored := storedRecords(t, s, recs)
	require.Len(t, stored, len(recs))
	for key, r := range stored {
		require.False(t, isJSONRecord(r.val), "%q", key)
	}
	require.NoError(t, s.Close())
}

// TestAFormat4StoreWithoutItsRecoderIsRefused: a format-4 store holding
// JSON records of a kind Open has no recoder for is refused, naming the
// kind, and nothing is recoded: a later open with every recoder recodes
// every record.
func TestAFormat4StoreWithoutItsRecoderIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	recs := format4Records(3)
	writeFormat4(t, s, recs)
	require.NoError(t, s.Close())

	calls := 0
	counting := func(raw []byte) ([]byte, error) {
		calls++
		return mapFromJSON(raw)
	}
	noWorkers := allRecoders(counting)
	noWorkers.Worker = nil
	_, err = Open(Options{Dir: dir, Recoders: noWorkers})
	require.ErrorContains(t, err, "from store format 4: it holds worker records in JSON")
	require.Zero(t, calls)

	s, err = Open(Options{Dir: dir, Recoders: allRecoders(counting)})
	require.NoError(t, err)
	require.Equal(t, len(recs), calls)
	require.NoError(t, s.Close())
}

// TestCheckFindsAForeignRecordThatIsNotMessagePack: from format 5, tether
// check counts the records other packages own and names one that is not a
// single MessagePack map (JSON left from format 4, say).
func TestCheckFindsAForeignRecordThatIsNotMessagePack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	good, err := mapFromJSON([]byte(`{"id":"acme"}`))
	require.NoError(t, err)
	require.NoError(t, s.kv.Update(context.Background(), func(tx *kv.Txn) error {
		if err := tx.Set(records.TenantKey("acme"), good); err != nil {
			return err
		}
		if err := tx.Set(records.MessageKey("acme", "m1"), append(good, 0xc0)); err != nil {
			return err
		}
		return tx.Set(records.WorkerKey("acme", "alice", "w1"), []byte(`{"by":"alice"}`))
	}))
	require.NoError(t, s.Close())
	rep, err := Check(dir)
	require.NoError(t, err)
	require.Equal(t, 3, rep.ForeignRecords)
	require.Len(t, rep.Problems, 2)
	require.Contains(t, rep.Problems[0], "worker record")
	require.Contains(t, rep.Problems[0], "is not a MessagePack map")
	require.Contains(t, rep.Problems[1], "message record")
	require.Contains(t, rep.Problems[1], "is not one whole MessagePack map")
}
