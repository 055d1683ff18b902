package nodes

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// createReady creates n ready nodes in queue q, shaped by mod, in batches.
func createReady(tb testing.TB, w *Service, q string, n int, mod func(i int, s *NodeSpec)) {
	tb.Helper()
	c := Caller{Tenant: "acme", Sub: "head", Dispatcher: true}
	for i := 0; i < n; i += MaxBatch {
		specs := make([]NodeSpec, 0, MaxBatch)
		for j := i; j < min(n, i+MaxBatch); j++ {
			id := fmt.Sprintf("%s-%08d", q, j)
			s := NodeSpec{ID: &id, Type: "task", Queue: &q}
			if mod != nil {
				mod(j, &s)
			}
			specs = append(specs, s)
		}
		if _, err := w.CreateBatch(context.Background(), c, specs, "items", nil); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkClaimNextFilteredMiss measures a claim-next whose filter matches
// none of 50 000 ready nodes: the answer is "nothing", and what it costs is
// how much of the queue the choice has to look at.
func BenchmarkClaimNextFilteredMiss(b *testing.B) {
	const ready = 50000
	w, _ := benchSetup(b, 0)
	createReady(b, w, "plain", ready, func(i int, s *NodeSpec) {
		// Odd shards hold only tests, so type build with label shard-1 is
		// empty though each alone is common.
		s.Type = []string{"build", "test"}[i%2]
		s.Labels = []string{fmt.Sprintf("shard-%d", i%10)}
	})
	bob := "bob"
	createReady(b, w, "for-bob", ready, func(_ int, s *NodeSpec) { s.Target = &bob })
	alice := Caller{Tenant: "acme", Sub: "alice"}
	for _, bc := range []struct {
		name string
		p    ClaimNextParams
	}{
		{"label", ClaimNextParams{Caller: alice, Queue: "plain", Labels: []string{"gpu"}}},
		{"type", ClaimNextParams{Caller: alice, Queue: "plain", Types: []string{"deploy"}}},
		{"type+label", ClaimNextParams{Caller: alice, Queue: "plain", Types: []string{"build"}, Labels: []string{"shard-1"}}},
		{"targeted-to-another", ClaimNextParams{Caller: alice, Queue: "for-bob"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				got, err := w.ClaimNext(ctx, bc.p)
				if err != nil || len(got) != 0 {
					b.Fatalf("claim: %v %d", err, len(got))
				}
			}
		})
	}
}

// BenchmarkWriteBesideFilteredMisses measures an unrelated write (a create
// in another queue) while 8 claimers keep asking a queue of 50 000 ready
// nodes for a label none carries: what each write waits for on the writer
// goroutine behind their choices.
func BenchmarkWriteBesideFilteredMisses(b *testing.B) {
	const ready = 50000
	w, _ := benchSetup(b, 0)
	createReady(b, w, "plain", ready, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var polls sync.WaitGroup
	for range 8 {
		polls.Go(func() {
			p := ClaimNextParams{Caller: Caller{Tenant: "acme", Sub: "alice"}, Queue: "plain", Labels: []string{"gpu"}}
			for ctx.Err() == nil {
				if _, err := w.ClaimNext(ctx, p); err != nil && ctx.Err() == nil {
					b.Error(err)
					return
				}
			}
		})
	}
	head := Caller{Tenant: "acme", Sub: "head", Dispatcher: true}
	q, i := "other", 0
	for b.Loop() {
		id := fmt.Sprintf("w%08d", i)
		i++
		if _, err := w.CreateBatch(ctx, head, []NodeSpec{{ID: &id, Type: "task", Queue: &q}}, "items", nil); err != nil {
			b.Fatal(err)
		}
	}
	cancel()
	polls.Wait()
}
