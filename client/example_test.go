package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/tether-run/tether/client"
)

// Claim a node, treating "someone else holds it" as a normal answer.
func Example() {
	ctx := context.Background()
	c, err := client.NewClientWithResponses("http://127.0.0.1:36725",
		client.WithBearerToken(os.Getenv("TETHER_TOKEN")),
		client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
	if err != nil {
		log.Fatal(err)
	}

	ttl := int64(60_000)
	res, err := c.ClaimNodeWithResponse(ctx, "task-1", client.ClaimRequest{TTLMS: &ttl})
	if err != nil {
		log.Fatal(err)
	}
	err = client.CheckResponse(res.HTTPResponse, res.Body)
	switch {
	case client.IsCode(err, client.ProblemCodeConflict):
		fmt.Println("not now:", res.ApplicationProblemJSON409.Detail)
	case err != nil:
		log.Fatal(err)
	default:
		lease := res.JSON200.Lease
		fmt.Println("claimed with fence", lease.Fence, "until", lease.ExpiresAt)
	}
}

// Create a node, claim it, keep its lease while working, and complete it with
// the lease's fence. The work's context ends if the lease is lost, so a worker
// never goes on (or completes) after someone else has taken the node.
func ExampleKeep() {
	ctx := context.Background()
	c, err := client.NewClientWithResponses(os.Getenv("TETHER_URL"),
		client.WithBearerToken(os.Getenv("TETHER_TOKEN")),
		client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
	if err != nil {
		log.Fatal(err)
	}

	id, queue := "report-42", "default"
	created, err := c.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: &id, Type: "task", Queue: &queue})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.CheckResponse(created.HTTPResponse, created.Body); err != nil {
		log.Fatal(err)
	}

	ttl := int64(60_000)
	claimed, err := c.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{TTLMS: &ttl})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.CheckResponse(claimed.HTTPResponse, claimed.Body); err != nil {
		log.Fatal(err)
	}
	lease := claimed.JSON200.Lease

	// Renewed every 20 s from here on, until stop.
	workCtx, stop := client.Keep(ctx, c, id, lease)
	result, workErr := writeReport(workCtx)
	if err := stop(); errors.Is(err, client.ErrLeaseLost) {
		log.Printf("gave up %s: %v", id, err) // someone else runs it now
		return
	}
	if workErr != nil {
		res, err := c.FailNodeWithResponse(ctx, id, client.FailRequest{Error: workErr.Error(), Fence: &lease.Fence})
		if err == nil {
			err = client.CheckResponse(res.HTTPResponse, res.Body)
		}
		log.Println("failed:", workErr, err)
		return
	}

	done, err := c.CompleteNodeWithResponse(ctx, id, client.CompleteRequest{
		Fence: &lease.Fence, Result: result, Usage: &client.Usage{"tokens": 1200},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.CheckResponse(done.HTTPResponse, done.Body); err != nil {
		log.Fatal(err) // lease_lost if it lapsed between stop and here
	}
	fmt.Println(id, done.JSON200.Status)
}

// writeReport stands for the work; it stops when ctx ends.
func writeReport(ctx context.Context) (map[string]any, error) {
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-time.After(time.Second):
		return map[string]any{"pages": 3}, nil
	}
}
