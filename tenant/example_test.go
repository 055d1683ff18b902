package tenant_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/lease"
	"github.com/tether-run/tether/tenant"
)

// A tenant's policy caps the TTL of its claims.
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

	def, max := 30*time.Second, time.Minute
	p, err := store.Tenants().SetPolicy(ctx, "acme", tenant.PolicyPatch{ClaimTTLDefault: &def, ClaimTTLMax: &max})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("max TTL", p.ClaimTTLMax)

	if _, err := store.Create(ctx, "acme", graph.NodeSpec{ID: "long", Type: "task"}); err != nil {
		log.Fatal(err)
	}
	l, err := store.Claim(ctx, lease.ClaimParams{Tenant: "acme", NodeID: "long", Worker: "alice", TTL: time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("granted", l.TTL, "capped", l.Capped)
	// Output:
	// max TTL 1m0s
	// granted 1m0s capped true
}

// An API key made in-process authenticates over HTTP once `tether serve`
// opens the same directory; VerifyKey checks it here.
func ExampleTenants_CreateKey() {
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

	k, err := store.Tenants().CreateKey(ctx, "acme", "ci-runner", tenant.RoleWorker, "CI")
	if err != nil {
		log.Fatal(err)
	}
	who, err := store.Tenants().VerifyKey(ctx, k.Token)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(who.Tenant, who.Worker, who.Role)
	// Output: acme ci-runner worker
}
