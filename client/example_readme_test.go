package client_test

import (
	"context"
	"log"
	"os"

	"github.com/tether-run/tether/client"
)

// The README's Go snippet, whole: take the next ready node of a queue (waiting
// up to 30 s), hold its lease while working, and complete it with the fence.
// The work's context ends if the lease is lost.
func ExampleClientWithResponses_ClaimNextWithResponse() {
	ctx := context.Background()
	c, err := client.NewClientWithResponses(os.Getenv("TETHER_URL"), client.WithBearerToken(os.Getenv("TETHER_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	wait := int64(30000)
	res, err := c.ClaimNextWithResponse(ctx, "default", client.ClaimNextRequest{WaitMS: &wait})
	if err != nil {
		log.Fatal(err)
	}
	if res.JSON200 != nil { // 204: nothing was ready
		work, stop := client.Keep(ctx, c, res.JSON200.Node.ID, res.JSON200.Lease)
		result := doTheWork(work, res.JSON200.Node) // stops early if work is cancelled (lease lost)
		if err := stop(); err != nil {
			log.Printf("lease lost: %v", err) // someone else runs it now
			return
		}
		c.CompleteNodeWithResponse(ctx, res.JSON200.Node.ID, client.CompleteRequest{Fence: &res.JSON200.Lease.Fence, Result: result})
	}
}

// doTheWork stands for your own code.
func doTheWork(ctx context.Context, n client.Node) map[string]any {
	select {
	case <-ctx.Done():
		return nil
	default:
		return map[string]any{"done": n.ID}
	}
}
