package graphstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/records"
)

// benchStore opens a store as a server does: with the engine reopened after
// the rebuild (ReleaseScanPages), as Open did for every caller before it
// became an option; without it BenchmarkNodeInsertDurable measured 2 to 4
// times slower on a shared machine.
func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(Options{Dir: b.TempDir(), ReleaseScanPages: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkNodeInsertDurable: one durable create per op from 64 concurrent
// writers, so group commit shares fsyncs.
func BenchmarkNodeInsertDurable(b *testing.B) {
	s := benchStore(b)
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("n%09d", n.Add(1))
			if err := s.Update(context.Background(), func(tx *Tx) error {
				return tx.NodeInsert(newNode("acme", id, 0), "head")
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(s.Stats().Closures.Load())/float64(max(1, s.Stats().Syncs.Load())), "writes/fsync")
}

// BenchmarkNodeGet: one snapshot read of a node by id.
func BenchmarkNodeGet(b *testing.B) {
	s := benchStore(b)
	for i := 0; i < 1000; i++ {
		id := fmt.Sprintf("n%04d", i)
		if err := s.Update(context.Background(), func(tx *Tx) error { return tx.NodeInsert(newNode("acme", id, 0), "head") }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			id := fmt.Sprintf("n%04d", i%1000)
			i++
			if err := s.View(func(tx *Tx) error { _, err := tx.NodeGet("acme", id); return err }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBigTransaction: one transaction writing and scanning as it goes,
// the shape of a claims request of 1000 (it must stay linear).
func BenchmarkBigTransaction(b *testing.B) {
	s := benchStore(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		err := s.Update(context.Background(), func(tx *Tx) error {
			for j := 0; j < 1000; j++ {
				n := newNode("acme", fmt.Sprintf("b%d-%04d", i, j), 0)
				if err := tx.NodeInsert(n, "head"); err != nil {
					return err
				}
				if _, err := tx.LiveEdges("acme", n.ID, EdgeDependsOn, DirOut); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// typicalNodeRecord is a node as a run leaves it: claimed and completed
// once, with labels, a few props, usage, a result and a live assigned edge.
func typicalNodeRecord() *records.Node {
	at := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	timeout := int64(60_000)
	return &records.Node{
		Tenant: "acme", ID: "01JEXAMPLE0000000000000042", Type: "task", Title: "summarise the report",
		Body: "Read the attached report and write a one-paragraph summary.", Status: "running",
		Queue: "agents", Priority: 5, Target: "gpu", Labels: []string{"batch", "q4"},
		Props:    map[string]any{"customer": "c-1042", "model": "large", "tokens": int64(4096)},
		Attempts: 1, MaxAttempts: 3, TimeoutMS: &timeout, OnChildFail: "fail",
		Lease:     &records.Lease{By: "worker-7", Session: "s-91", Fence: 12, TTLMS: 30_000, ClaimedAt: at, RenewedAt: at, ExpiresAt: at.Add(30 * time.Second)},
		LastFence: 12, Result: json.RawMessage(`{"ok":true}`),
		Usage: map[string]float64{"tokens_in": 1200}, UsageTotal: map[string]float64{"tokens_in": 1200},
		Version: 4, CreatedBy: "key:dispatcher", CreatedAt: at, UpdatedAt: at,
		Assigned: &records.LiveEdgeRecord{Edge: records.Edge{From: "01JEXAMPLE0000000000000042", Type: "assigned", To: "worker-7", Props: map[string]any{}, CreatedBy: "worker-7", CreatedAt: at}, Seq: 77},
	}
}

// BenchmarkNodeRecordCodec: encoding and decoding a typical node record
// with the store's codec; bytes/record is its encoded size.
func BenchmarkNodeRecordCodec(b *testing.B) {
	n := typicalNodeRecord()
	rec, err := n.MarshalMsg(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for i := 0; i < b.N; i++ {
			if buf, err = n.MarshalMsg(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(rec)), "bytes/record")
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var back records.Node
			if _, err := back.UnmarshalMsg(rec); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(rec)), "bytes/record")
	})
}
