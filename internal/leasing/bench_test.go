package leasing

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

func benchService(b *testing.B, nodes int, clk clock.Clock) *Service {
	b.Helper()
	store, err := graphstore.Open(graphstore.Options{Dir: b.TempDir(), Clock: clk, ReleaseScanPages: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	svc := New(Config{Store: store, Clock: clk, Limits: func(context.Context, string) (Limits, error) {
		return Limits{TTLDefault: time.Minute, TTLMax: time.Hour}, nil
	}})
	if err := svc.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(svc.Stop)
	for start := 0; start < nodes; start += 1000 {
		err = store.Update(context.Background(), func(tx *graphstore.Tx) error {
			for i := start; i < min(nodes, start+1000); i++ {
				if err := tx.NodeInsert(&records.Node{
					Tenant: "acme", ID: fmt.Sprintf("n%06d", i), Type: "task", Status: records.StatusQueued, Queue: "q",
					Labels: []string{}, Props: map[string]any{}, MaxAttempts: 1 << 30,
					Usage: map[string]float64{}, UsageTotal: map[string]float64{}, OnChildFail: "fail",
				}, "head"); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return svc
}

// BenchmarkClaimRelease: a durable claim and a durable release of one node by
// id, 64 workers each on nodes of their own.
func BenchmarkClaimRelease(b *testing.B) {
	svc := benchService(b, 64, clock.Real{})
	var worker atomic.Int64
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := worker.Add(1) - 1
		id, by := fmt.Sprintf("n%06d", w%64), fmt.Sprintf("w%d", w)
		for pb.Next() {
			if _, err := svc.Claim(ctx, ClaimParams{Tenant: "acme", NodeID: id, By: by}); err != nil {
				b.Fatal(err)
			}
			if _, err := svc.Release(ctx, ReleaseParams{HolderParams: HolderParams{Tenant: "acme", NodeID: id, By: by}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRenew: renewals (not fsynced) of 64 held leases.
func BenchmarkRenew(b *testing.B) {
	svc := benchService(b, 64, clock.Real{})
	ctx := context.Background()
	for i := 0; i < 64; i++ {
		if _, err := svc.Claim(ctx, ClaimParams{Tenant: "acme", NodeID: fmt.Sprintf("n%06d", i), By: fmt.Sprintf("w%d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	var worker atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := worker.Add(1) - 1
		p := HolderParams{Tenant: "acme", NodeID: fmt.Sprintf("n%06d", w%64), By: fmt.Sprintf("w%d", w%64)}
		for pb.Next() {
			if _, err := svc.Renew(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReap: settling expired leases, one node per op, in the reaper's
// batches of 256.
func BenchmarkReap(b *testing.B) {
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	svc := benchService(b, b.N, clk)
	// Settle them here, not in the background, so that only reap is
	// measured.
	svc.Stop()
	ctx := context.Background()
	refs := make([]nodeRef, 0, b.N)
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("n%06d", i)
		if _, err := svc.Claim(ctx, ClaimParams{Tenant: "acme", NodeID: id, By: "w", TTL: time.Millisecond}); err != nil {
			b.Fatal(err)
		}
		refs = append(refs, nodeRef{"acme", id})
	}
	clk.Advance(time.Millisecond) // every lease has expired
	if got := len(svc.deadlines.due(clk.Now(), b.N)); got != b.N {
		b.Fatalf("%d of %d leases due", got, b.N)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for len(refs) > 0 {
		n := min(reapBatch, len(refs))
		if err := svc.reap(refs[:n]); err != nil {
			b.Fatal(err)
		}
		refs = refs[n:]
	}
}
