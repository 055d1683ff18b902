package clienttest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/client/clienttest"
)

// A real server on a fake clock: a worker claims a node and stops renewing;
// once the test moves the clock past the lease, the node is back in its
// queue for the next worker, with the next fence. In a test, New(t, nil)
// starts it and shuts it down when the test ends.
func Example() {
	srv, err := clienttest.Start(&clienttest.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()

	id, queue := "job-1", "jobs"
	created, err := srv.Client.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: &id, Type: "task", Queue: &queue})
	if err != nil || created.JSON201 == nil {
		log.Fatal(err, string(created.Body))
	}
	ttl := int64(30_000)
	alice := srv.ClientFor(srv.Tenant, "alice")
	first, err := alice.ClaimNextWithResponse(ctx, queue, client.ClaimNextRequest{TTLMS: &ttl})
	if err != nil || first.JSON200 == nil {
		log.Fatal(err, string(first.Body))
	}
	fmt.Println("alice holds", first.JSON200.Lease.NodeID, "fence", first.JSON200.Lease.Fence)

	srv.Advance(time.Minute) // alice's lease runs out
	bob := srv.ClientFor(srv.Tenant, "bob")
	for {
		next, err := bob.ClaimNextWithResponse(ctx, queue, client.ClaimNextRequest{})
		if err != nil {
			log.Fatal(err)
		}
		if next.JSON200 != nil {
			fmt.Println("bob holds", next.JSON200.Lease.NodeID, "fence", next.JSON200.Lease.Fence)
			break
		}
		time.Sleep(5 * time.Millisecond) // the reaper has not given it back yet
	}
	// Output:
	// alice holds job-1 fence 1
	// bob holds job-1 fence 2
}
