package kv

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkConcurrentUpdates: 32 writers, each write setting five small keys
// and waiting for its commit; reports writes per commit and the mean commit
// time (Badger's write with its WAL sync).
func BenchmarkConcurrentUpdates(b *testing.B) {
	s, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	s.Start()
	defer s.Close()
	var n atomic.Int64
	val := make([]byte, 120)
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := n.Add(1)
				if i > int64(b.N) {
					return
				}
				err := s.Update(context.Background(), func(tx *Txn) error {
					for k := range 5 {
						if err := tx.Set(fmt.Appendf(nil, "k/%d/%d/%d", w, i, k), val); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := s.Stats()
	if c := st.Syncs.Load(); c > 0 {
		b.ReportMetric(float64(st.Closures.Load())/float64(c), "writes/commit")
		b.ReportMetric(float64(time.Duration(st.SyncNanos.Load()/c).Microseconds()), "µs/commit")
	}
}
