package lease_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/lease"
)

// A lease cycle in-process: claim, renew, extend, release, claim again
// (fence 2), complete.
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

	if _, err := store.Create(ctx, "acme", graph.NodeSpec{ID: "build-1", Type: "build", Queue: "builds"}); err != nil {
		log.Fatal(err)
	}
	l, err := store.ClaimNext(ctx, lease.ClaimNextParams{Tenant: "acme", Queue: "builds", Worker: "alice", TTL: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("claimed", l.NodeID, "fence", l.Fence)
	if l, err = store.Renew(ctx, l); err != nil {
		log.Fatal(err)
	}
	if l, err = store.Extend(ctx, l, 10*time.Minute); err != nil {
		log.Fatal(err)
	}
	fmt.Println("extended to", l.ExpiresAt.Sub(l.ClaimedAt) > 10*time.Minute)
	if err := store.Release(ctx, l); err != nil {
		log.Fatal(err)
	}

	l2, err := store.Claim(ctx, lease.ClaimParams{Tenant: "acme", NodeID: "build-1", Worker: "bob"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("claimed again by", l2.Worker, "fence", l2.Fence)
	if err := store.Complete(ctx, l2, map[string]string{"artifact": "app.tar"}); err != nil {
		log.Fatal(err)
	}
	n, err := store.Graph().Node(ctx, "acme", "build-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n.Status, string(n.Result))
	// Output:
	// claimed build-1 fence 1
	// extended to true
	// claimed again by bob fence 2
	// done {"artifact":"app.tar"}
}
