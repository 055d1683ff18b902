package main

// The Go client's retries carry its calls over a kill -9 of the server that
// owns the tenant's shard on etcd: a client that talks to the other server
// sees every create and renewal succeed once that server takes the shard
// over, and no create happens twice, though some were in flight at the kill.

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/etcdtest"
)

func TestEtcdClientRetriesOverOwnerKill(t *testing.T) {
	c := etcdtest.Start(t, 1)
	hc := httpClient(t)
	a, b, idA, victims := startPairVia(t, c, hc, c.Endpoints[0])
	tn := victims[0]
	ctx := context.Background()
	// Enough tries to outlast a takeover: A's session lapses efLeaseTTL after
	// its last keepalive, then B is elected and opens the shard; B holds a
	// request up to 2 s for an owner before it answers 503.
	policy := client.WithRetries(client.RetryPolicy{MaxAttempts: 12, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second})
	viaB := func(tok string) *client.ClientWithResponses {
		cl, err := client.NewClientWithResponses(b.url, client.WithHTTPClient(hc), client.WithBearerToken(tok), policy)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	disp := viaB(mintTenant(t, tn, "dispatcher", "dispatcher"))
	holder := viaB(mintTenant(t, tn, "holder", "worker"))

	if res, err := disp.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("held"), Type: "task"}); err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %s", err, body(res))
	}
	claim, err := holder.ClaimNodeWithResponse(ctx, "held", client.ClaimRequest{TTLMS: ptr(int64(60_000))})
	if err != nil || claim.JSON200 == nil {
		t.Fatalf("claim: %v %s", err, body(claim))
	}
	if by := claim.HTTPResponse.Header.Get(efServedBy); by != idA {
		t.Fatalf("the claim was served by %s, not by A (%s)", by, idA)
	}
	fence := claim.JSON200.Lease.Fence

	// Creates go on through B, one after another, across the kill.
	type created struct {
		n  int
		by string
	}
	acked := make(chan created)
	failed := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		defer close(acked)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			res, err := disp.CreateNodeWithResponse(ctx, nil, client.NodeCreate{Type: "task", Title: ptr(fmt.Sprintf("w-%d", i))})
			if err != nil || res.StatusCode() != http.StatusCreated {
				failed <- fmt.Errorf("create w-%d: %v %s", i, err, body(res))
				return
			}
			acked <- created{i, res.HTTPResponse.Header.Get(efServedBy)}
		}
	}()
	var killed time.Time
	total, afterKill, byB := 0, 0, 0
	renewals := 0
	for byB < 20 {
		select {
		case err := <-failed:
			t.Fatalf("%v, %v after the kill (retries must carry a create over the takeover)", err, time.Since(killed).Round(time.Millisecond))
		case cr, ok := <-acked:
			if !ok {
				t.Fatal("the creates stopped")
			}
			total++
			if !killed.IsZero() {
				afterKill++
				if cr.by != idA {
					byB++
					// The holder's lease, claimed through A, renews through B.
					r, err := holder.RenewLeaseWithResponse(ctx, "held", client.RenewRequest{Fence: ptr(fence)})
					if err != nil || r.JSON200 == nil {
						t.Fatalf("renewal through B after the takeover: %v %s", err, body(r))
					}
					renewals++
				}
			}
			if total == 20 {
				a.kill9()
				killed = time.Now()
				// A renewal sent right after the kill waits out the takeover.
				r, err := holder.RenewLeaseWithResponse(ctx, "held", client.RenewRequest{Fence: ptr(fence)})
				if err != nil || r.JSON200 == nil {
					t.Fatalf("renewal during the takeover: %v %s", err, body(r))
				}
				t.Logf("A killed with SIGKILL after %d creates; a renewal sent then got through in %v",
					total, time.Since(killed).Round(time.Millisecond))
			}
		}
	}
	close(stop)
	for range acked {
		total++
	}
	select {
	case err := <-failed:
		t.Fatalf("after the takeover: %v", err)
	default:
	}
	t.Logf("%d creates acknowledged, %d after the kill; %d renewals through B", total, afterKill, renewals)

	list, err := disp.ListNodesWithResponse(ctx, &client.ListNodesParams{Type: ptr("task"), Limit: ptr(client.Limit(1000))})
	if err != nil || list.JSON200 == nil {
		t.Fatalf("list: %v %s", err, body(list))
	}
	seen := map[string]int{}
	for _, n := range list.JSON200.Items {
		if n.ID != "held" {
			seen[n.Title]++
		}
	}
	for i := range total {
		if title := fmt.Sprintf("w-%d", i); seen[title] != 1 {
			t.Errorf("%s was created %d times, want once", title, seen[title])
		}
	}
	if len(seen) != total {
		t.Errorf("%d distinct titles stored, %d creates acknowledged", len(seen), total)
	}
}
