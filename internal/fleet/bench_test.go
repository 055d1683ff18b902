package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/graphstore"
)

func benchRegistry(b *testing.B) *Registry {
	b.Helper()
	clk := clocktest.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	store, err := graphstore.Open(graphstore.Options{Dir: b.TempDir(), Clock: clk, ReleaseScanPages: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	return New(Config{Store: store})
}

var benchMeta = map[string]any{"host": "build-7", "pid": 4242.0, "version": "1.4.2", "gpus": []any{"a100", "a100"}}

// BenchmarkHeartbeat is the frequent write: read the worker's record, write
// it back (not fsynced: heartbeats are eager).
func BenchmarkHeartbeat(b *testing.B) {
	r := benchRegistry(b)
	ctx := context.Background()
	p := HeartbeatParams{Tenant: "acme", By: "alice", Worker: "w1", Status: StatusWorking, Node: "n1", SetMeta: true, Meta: benchMeta}
	if _, err := r.Heartbeat(ctx, p); err != nil {
		b.Fatal(err)
	}
	p.SetMeta = false
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Heartbeat(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList reads a page of 100 worker records.
func BenchmarkList(b *testing.B) {
	r := benchRegistry(b)
	ctx := context.Background()
	for i := range 100 {
		p := HeartbeatParams{Tenant: "acme", By: "alice", Worker: fmt.Sprint("w", i), Status: StatusIdle, SetMeta: true, Meta: benchMeta}
		if _, err := r.Heartbeat(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		views, _, err := r.List("acme", "", 100)
		if err != nil || len(views) != 100 {
			b.Fatal(len(views), err)
		}
	}
}

// BenchmarkRecordCodec is one heartbeat's decode and encode of a record:
// the stored codec beside the JSON that format 4 used.
func BenchmarkRecordCodec(b *testing.B) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := Record{By: "alice", Worker: "w1", Status: StatusWorking, Node: "n1", Meta: benchMeta, StartedAt: now, LastSeenAt: now}
	b.Run("msgpack", func(b *testing.B) {
		raw, err := rec.MarshalMsg(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			var r Record
			if _, err := r.UnmarshalMsg(raw); err != nil {
				b.Fatal(err)
			}
			if raw, err = r.MarshalMsg(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		raw, err := json.Marshal(rec)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			var r Record
			if err := json.Unmarshal(raw, &r); err != nil {
				b.Fatal(err)
			}
			if raw, err = json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
