package nodes

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
)

func benchSetup(b *testing.B, nodes int) (*Service, *graphstore.Store) {
	b.Helper()
	store, err := graphstore.Open(graphstore.Options{Dir: b.TempDir(), ReleaseScanPages: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	limits := func(context.Context, string) (leasing.Limits, error) {
		return leasing.Limits{TTLDefault: time.Minute, TTLMax: time.Hour}, nil
	}
	leases := leasing.New(leasing.Config{Store: store, Limits: limits})
	w := New(Config{Store: store, Leases: leases, Limits: limits,
		Defaults: func(context.Context, string) (Defaults, error) { return Defaults{MaxAttempts: 5}, nil }})
	if err := leases.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(leases.Stop)
	c := Caller{Tenant: "acme", Sub: "head", Dispatcher: true}
	for i := 0; i < nodes; i += 1000 {
		specs := make([]NodeSpec, 0, 1000)
		for j := i; j < min(nodes, i+1000); j++ {
			id, q := fmt.Sprintf("n%08d", j), "q"
			specs = append(specs, NodeSpec{ID: &id, Type: "task", Queue: &q})
		}
		if _, err := w.CreateBatch(context.Background(), c, specs, "items", nil); err != nil {
			b.Fatal(err)
		}
	}
	return w, store
}

// BenchmarkClaimNextComplete measures one claim-next and one complete, the
// pair a worker makes per job, through the domain layer (no HTTP).
func BenchmarkClaimNextComplete(b *testing.B) {
	w, _ := benchSetup(b, b.N+10)
	ctx := context.Background()
	c := Caller{Tenant: "acme", Sub: "worker"}
	b.ReportAllocs()
	b.SetParallelism(32) // 64 concurrent workers on 2 cores: group commit shares fsyncs
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			got, err := w.ClaimNext(ctx, ClaimNextParams{Caller: c, Queue: "q", Max: 1})
			if err != nil || len(got) != 1 {
				b.Fatalf("claim: %v %d", err, len(got))
			}
			if _, err := w.Complete(ctx, CompleteParams{HolderParams: leasing.HolderParams{Tenant: "acme", NodeID: got[0].Node.ID, By: "worker"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkClaims100CompleteMany measures make bench's (b) through the domain
// layer: claim-next of 100, then one batch completion of the 100, per
// iteration (b.N counts jobs). The writer's share of it bounds (b).
func BenchmarkClaims100CompleteMany(b *testing.B) {
	w, _ := benchSetup(b, b.N+200)
	ctx := context.Background()
	c := Caller{Tenant: "acme", Sub: "worker"}
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ps := make([]CompleteParams, 0, 100)
		for {
			n := 0
			for n < 100 && pb.Next() {
				n++
			}
			if n == 0 {
				return
			}
			got, err := w.ClaimNext(ctx, ClaimNextParams{Caller: c, Queue: "q", Max: n})
			if err != nil || len(got) != n {
				b.Fatalf("claim: %v %d", err, len(got))
			}
			ps = ps[:0]
			for _, g := range got {
				ps = append(ps, CompleteParams{HolderParams: leasing.HolderParams{Tenant: "acme", NodeID: g.Node.ID, By: "worker"}})
			}
			if _, errs := w.CompleteMany(ctx, ps); errs[0] != nil {
				b.Fatal(errs[0])
			}
		}
	})
}
