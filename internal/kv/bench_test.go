package kv

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tether-run/tether/internal/pgschema"
	"github.com/tether-run/tether/internal/pgtest"
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
	benchConcurrentUpdates(b, s)
}

// BenchmarkConcurrentUpdatesPostgres is BenchmarkConcurrentUpdates on
// PostgreSQL (pgtest's server, fsync on): a commit is one transaction in one
// round trip; reports writes/s too.
func BenchmarkConcurrentUpdatesPostgres(b *testing.B) {
	url := pgtest.URL(b)
	p, err := pgxpool.New(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if _, err := pgschema.Migrate(context.Background(), p, "tether"); err != nil {
		b.Fatal(err)
	}
	s, err := OpenPostgres(PostgresOptions{Pool: p, Schema: "tether", Shard: 1})
	if err != nil {
		b.Fatal(err)
	}
	s.Start()
	defer s.Close()
	start := time.Now()
	benchConcurrentUpdates(b, s)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
}

func benchConcurrentUpdates(b *testing.B, s *Store) {
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
