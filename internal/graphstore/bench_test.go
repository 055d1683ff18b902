package graphstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(Options{Dir: b.TempDir()})
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
