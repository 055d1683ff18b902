package kv

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkScan reads 10,000 small keys with their values in one View: the
// shape of a list or of the scans at start-up.
func BenchmarkScan(b *testing.B) {
	s, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	s.Start()
	defer s.Close()
	val := make([]byte, 120)
	for i := 0; i < 10_000; i += 1000 {
		if err := s.Update(context.Background(), func(tx *Txn) error {
			for k := i; k < i+1000; k++ {
				if err := tx.Set(fmt.Appendf(nil, "k/%06d", k), val); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if err := s.View(func(tx *Txn) error {
			return tx.Scan([]byte("k/"), nil, false, true, func(_, _ []byte) (bool, error) {
				n++
				return true, nil
			})
		}); err != nil || n != 10_000 {
			b.Fatal(n, err)
		}
	}
}
