package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/nodes"
)

// createMany creates n nodes in batches through the server's work service:
// the HTTP round trips and the response validation of tens of thousands of
// nodes would take most of this test's time under -race, and what is under
// test is the claims.
func (e *env) createMany(n int, mk func(i int) nodes.NodeSpec) {
	e.t.Helper()
	head := nodes.Caller{Tenant: "acme", Sub: "head", Dispatcher: true}
	for i := 0; i < n; i += nodes.MaxBatch {
		specs := make([]nodes.NodeSpec, 0, nodes.MaxBatch)
		for j := i; j < min(n, i+nodes.MaxBatch); j++ {
			specs = append(specs, mk(j))
		}
		_, err := e.srv.Nodes.CreateBatch(context.Background(), head, specs, "items", nil)
		require.NoError(e.t, err)
	}
}

// fastestMiss is the fastest of a few claim-nexts that must find nothing, so
// that a stall of a loaded machine does not pass for a scan.
func fastestMiss(t *testing.T, c *client.ClientWithResponses, queue string, req client.ClaimNextRequest) time.Duration {
	t.Helper()
	best := time.Hour
	for range 3 {
		began := time.Now()
		requireNothing(t, c, queue, req)
		best = min(best, time.Since(began))
	}
	return best
}

func TestQueueClaimFilterDoesNotScan(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	// Many ready nodes none of which the filters below match, and, ahead of
	// them in claim order, nodes reserved to bob.
	const ready, forBob = claimFilterReady, 2000
	e.createMany(ready, func(i int) nodes.NodeSpec {
		return nodes.NodeSpec{ID: ptr(fmt.Sprintf("n%06d", i)), Type: []string{"build", "test"}[i%2], Queue: ptr("big"),
			Labels: []string{fmt.Sprintf("shard-%d", i%10)}}
	})
	e.createMany(forBob, func(i int) nodes.NodeSpec {
		return nodes.NodeSpec{ID: ptr(fmt.Sprintf("bob%06d", i)), Type: "deploy", Queue: ptr("big"), Priority: ptr(int64(10)),
			Target: ptr("bob"), Labels: []string{"gpu"}}
	})
	alice, bob := e.user("alice"), e.user("bob")

	floor := fastestMiss(t, alice, "empty", client.ClaimNextRequest{})
	label := fastestMiss(t, alice, "big", client.ClaimNextRequest{Labels: &[]string{"gpu"}})
	typ := fastestMiss(t, alice, "big", client.ClaimNextRequest{Types: &[]string{"deploy"}})
	t.Logf("claim-next over %d ready nodes finding nothing: label %v, type %v; on an empty queue %v", ready+forBob, label, typ, floor)
	// A walk of the queue took about half a second at 50 000 nodes without
	// -race, so the bound leaves room for a loaded machine and still fails
	// a scan.
	require.Less(t, label, 250*time.Millisecond, "a label nobody else's node carries")
	require.Less(t, typ, 250*time.Millisecond, "a type only bob's nodes have")

	// bob's nodes come first in claim order, but never to alice.
	got := mustClaimNext(t, alice, "big", client.ClaimNextRequest{})
	require.Equal(t, "n000000", got.Node.ID)
	require.Equal(t, "bob000000", mustClaimNext(t, bob, "big", client.ClaimNextRequest{}).Node.ID)
	require.Equal(t, "bob000001", mustClaimNext(t, bob, "big", client.ClaimNextRequest{Labels: &[]string{"gpu"}}).Node.ID)
	got = mustClaimNext(t, alice, "big", client.ClaimNextRequest{Types: &[]string{"test", "deploy"}, Labels: &[]string{"shard-3"}})
	require.Equal(t, "n000003", got.Node.ID, "the first test of shard 3; bob's deploys are his")

	// A long poll whose filter matches nothing is not woken by the nodes
	// that keep coming; the first it matches wakes it.
	waiting := func() (int, int64) { return e.srv.Store.ReadyWaiters("acme", "big") }
	e.srv.Nodes.TestSignals.Parked.Init(t)
	poll := make(chan *client.ClaimNextResponse, 1)
	go func() {
		res, err := alice.ClaimNextWithResponse(ctx, "big", client.ClaimNextRequest{Labels: &[]string{"gpu", "eu"}, WaitMS: ptr(int64(20000))})
		if err != nil {
			t.Error(err)
		}
		poll <- res
	}()
	e.srv.Nodes.TestSignals.Parked.WaitFor(t, func(q string) bool { return q == "big" })
	n, _ := waiting()
	require.Equal(t, 1, n, "the poll waits")
	_, before := waiting()
	e.createMany(300, func(i int) nodes.NodeSpec {
		c := nodes.NodeSpec{ID: ptr(fmt.Sprintf("late%03d", i)), Type: "build", Queue: ptr("big"), Labels: []string{"gpu"}}
		switch i % 3 {
		case 1:
			c.Labels = []string{"eu"}
		case 2:
			c.Labels, c.Target = []string{"gpu", "eu"}, ptr("bob") // bob's
		}
		return c
	})
	n, woken := waiting()
	require.Equal(t, 1, n, "still waiting")
	require.Equal(t, before, woken, "no node that it cannot take woke it")
	e.mustCreate(client.NodeCreate{ID: ptr("wanted"), Type: "build", Queue: ptr("big"), Labels: &[]string{"eu", "x", "gpu"}})
	select {
	case res := <-poll:
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Equal(t, "wanted", res.JSON200.Node.ID)
	case <-time.After(10 * time.Second):
		t.Fatal("the poll was not woken by a node it matches")
	}
	n, woken = waiting()
	require.Zero(t, n)
	require.Equal(t, before+1, woken, "woken once, by the node it took")
}
