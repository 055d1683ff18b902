package client_test

import (
	"context"
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
