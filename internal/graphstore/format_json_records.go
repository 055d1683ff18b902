package graphstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// Formats 3 and 4 stored the records other packages own as those packages'
// JSON. Opening such a store recodes each of them into its owner's
// MessagePack (foreign_records.go) before the store is handed out: in
// batches through the writer, each durable, each key keeping its expiry. A
// record already recoded is skipped (JSON starts with '{', a MessagePack map
// never does), so an open that stops half-way picks up where it stopped at
// the next one; the format is bumped only once every record is recoded.

// FromJSON turns one record its owner stored as JSON (formats 3 and 4) into
// the record as stored now.
type FromJSON func(raw []byte) ([]byte, error)

// Recoders are the owners' FromJSON, one per kind of record. Open needs the
// one for every kind a store of format 3 or 4 holds records of, and refuses
// the store, writing nothing, when one is missing.
type Recoders struct {
	Tenant, APIKey, Worker, Message, Schedule, ScheduleRun FromJSON
}

// RecodeJSON is the FromJSON of record type T: its JSON decoded into a T,
// and that encoded by its generated codec.
func RecodeJSON[T any, P interface {
	*T
	records.Record
}](raw []byte) ([]byte, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return P(&v).MarshalMsg(nil)
}

type jsonRecordKind struct {
	name     string
	tag      byte
	fromJSON FromJSON
}

func (r Recoders) kinds() []jsonRecordKind {
	return []jsonRecordKind{
		{"tenant", records.TagTenant, r.Tenant},
		{"API key", records.TagAPIKey, r.APIKey},
		{"worker", records.TagWorker, r.Worker},
		{"message", records.TagMessage, r.Message},
		{"schedule", records.TagSchedule, r.Schedule},
		{"schedule run", records.TagScheduleRun, r.ScheduleRun},
	}
}

// recodeBatch bounds the records one migration transaction rewrites.
const recodeBatch = 500

func isJSONRecord(val []byte) bool { return len(val) > 0 && val[0] == '{' }

// recodeJSONRecords rewrites every JSON record of the kinds others own; the
// writer must be running.
func (s *Store) recodeJSONRecords(r Recoders) error {
	kinds := r.kinds()
	if err := s.kv.View(func(tx *kv.Txn) error {
		for _, k := range kinds {
			if k.fromJSON != nil {
				continue
			}
			found := false
			if err := tx.Scan([]byte{k.tag, records.KeySeparator}, nil, false, true, func(_, val []byte) (bool, error) {
				found = isJSONRecord(val)
				return !found, nil
			}); err != nil {
				return err
			}
			if found {
				return fmt.Errorf("it holds %s records in JSON, and this program cannot recode them: open it with tether serve, which migrates it", k.name)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	recoded := 0
	for _, k := range kinds {
		if k.fromJSON == nil {
			continue
		}
		n, err := s.recodeKind(k)
		recoded += n
		if err != nil {
			return fmt.Errorf("error recoding the %s records: %w", k.name, err)
		}
	}
	if recoded > 0 && s.log != nil {
		s.log.Info("store records recoded from JSON", "records", recoded)
	}
	return nil
}

type recodedRecord struct {
	key, val  []byte
	expiresAt uint64
}

func (s *Store) recodeKind(k jsonRecordKind) (int, error) {
	prefix := []byte{k.tag, records.KeySeparator}
	var after []byte
	total := 0
	for {
		var batch []recodedRecord
		full := false
		err := s.kv.View(func(tx *kv.Txn) error {
			return tx.ScanExpiry(prefix, after, func(key, val []byte, expiresAt uint64) (bool, error) {
				after = key
				if !isJSONRecord(val) {
					return true, nil
				}
				b, err := k.fromJSON(val)
				if err != nil {
					return false, fmt.Errorf("error recoding %q: %w", key, err)
				}
				batch = append(batch, recodedRecord{key: key, val: b, expiresAt: expiresAt})
				full = len(batch) == recodeBatch
				return !full, nil
			})
		})
		if err != nil {
			return total, err
		}
		if len(batch) == 0 {
			return total, nil
		}
		if err := s.kv.Update(context.Background(), func(tx *kv.Txn) error {
			for _, r := range batch {
				if err := tx.SetExpiresAt(r.key, r.val, r.expiresAt); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return total, err
		}
		total += len(batch)
		if !full {
			return total, nil // the scan reached the end
		}
	}
}
