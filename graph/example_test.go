package graph_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/lease"
)

// Who carried a node: every run is an assigned edge, live while the lease
// is, retired with its outcome once the run ends.
func Example() {
	dir, err := os.MkdirTemp("", "tether-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := lease.Open(dir, lease.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()

	if _, err := store.Create(ctx, "acme", graph.NodeSpec{ID: "report", Type: "task"}); err != nil {
		log.Fatal(err)
	}
	first, err := store.Claim(ctx, lease.ClaimParams{Tenant: "acme", NodeID: "report", Worker: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Release(ctx, first); err != nil {
		log.Fatal(err)
	}
	second, err := store.Claim(ctx, lease.ClaimParams{Tenant: "acme", NodeID: "report", Worker: "bob"})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Complete(ctx, second, nil); err != nil {
		log.Fatal(err)
	}

	carriers, err := store.Graph().Carriers(ctx, "acme", "report") // alice fence 1 released, bob fence 2 done
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range carriers {
		fmt.Println(a.Worker, "fence", a.Fence, a.Outcome)
	}
	byBob, err := store.Graph().CarriedBy(ctx, "acme", "bob")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("bob carried", len(byBob), "node:", byBob[0].NodeID)
	// Output:
	// alice fence 1 released
	// bob fence 2 done
	// bob carried 1 node: report
}
