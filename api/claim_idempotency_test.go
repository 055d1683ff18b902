package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// withKey sends a call with Idempotency-Key key.
func withKey(key string) client.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("Idempotency-Key", key)
		return nil
	}
}

// claimKeyed is claim-next of queue under key, at once (wait_ms 0).
func claimKeyed(t *testing.T, c *client.ClientWithResponses, queue, key string, req client.ClaimNextRequest) *client.ClaimNextResponse {
	t.Helper()
	if req.WaitMS == nil {
		req.WaitMS = ptr(int64(0))
	}
	res, err := c.ClaimNextWithResponse(context.Background(), queue, req, withKey(key))
	require.NoError(t, err)
	return res
}

// nodeOf reads node id as the dispatcher sees it.
func (e *env) nodeOf(id string) client.Node {
	e.t.Helper()
	res, err := e.dispatcher().GetNodeWithResponse(context.Background(), id)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return *res.JSON200
}

func TestClaimKeyRepeatAnswersTheSameClaim(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(client.NodeCreate{ID: ptr("a"), Type: "task", Queue: ptr("ck"), Priority: ptr(int64(2))})
	e.mustCreate(client.NodeCreate{ID: ptr("b"), Type: "task", Queue: ptr("ck"), Priority: ptr(int64(1))})
	alice := e.user("alice")
	req := client.ClaimNextRequest{TTLMS: ptr(int64(30000))}

	first := claimKeyed(t, alice, "ck", "claim-1", req)
	require.Equal(t, http.StatusOK, first.StatusCode(), string(first.Body))
	require.Equal(t, "a", first.JSON200.Node.ID)

	// The lease moves on (a renewal) before the repeat: the repeat answers
	// the lease as it is now.
	e.clk.Advance(10 * time.Second)
	renew, err := alice.RenewLeaseWithResponse(ctx, "a", client.RenewRequest{Fence: ptr(first.JSON200.Lease.Fence)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, renew.StatusCode(), string(renew.Body))

	again := claimKeyed(t, alice, "ck", "claim-1", req)
	require.Equal(t, http.StatusOK, again.StatusCode(), string(again.Body))
	require.Equal(t, "a", again.JSON200.Node.ID, "the same node")
	require.Equal(t, first.JSON200.Lease.Fence, again.JSON200.Lease.Fence, "under the same fence")
	require.False(t, again.JSON200.Renewed)
	require.Equal(t, first.JSON200.Lease.ClaimedAt, again.JSON200.Lease.ClaimedAt)
	require.True(t, again.JSON200.Lease.ExpiresAt.After(first.JSON200.Lease.ExpiresAt), "with the lease's current expiry")
	require.Equal(t, first.JSON200.Edge.CreatedAt, again.JSON200.Edge.CreatedAt, "and the same assigned edge")
	require.Equal(t, int64(1), e.nodeOf("a").Attempts, "a repeat counts no attempt")
	require.Equal(t, client.NodeStatusQueued, e.nodeOf("b").Status, "and claims nothing more")

	// Whitespace and member order do not make it another request.
	resp, body := e.rawWithHeaders(http.MethodPost, "/v1/queues/ck/claim", e.token("acme", "alice"),
		`{ "wait_ms": 0,  "ttl_ms": 30000 }`, map[string]string{"Idempotency-Key": "claim-1", "Content-Type": "application/json"})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"node_id":"a"`)

	// The same key with another request: another body, another queue, the
	// many-claims endpoint, another identity.
	other := claimKeyed(t, alice, "ck", "claim-1", client.ClaimNextRequest{TTLMS: ptr(int64(60000))})
	requireProblem(t, other.ApplicationProblemJSON422, http.StatusUnprocessableEntity, client.ProblemCodeIdempotencyMismatch)
	otherQueue := claimKeyed(t, alice, "elsewhere", "claim-1", req)
	requireProblem(t, otherQueue.ApplicationProblemJSON422, http.StatusUnprocessableEntity, client.ProblemCodeIdempotencyMismatch)
	many, err := alice.ClaimNextManyWithResponse(ctx, "ck", client.ClaimManyRequest{TTLMS: req.TTLMS, WaitMS: ptr(int64(0))}, withKey("claim-1"))
	require.NoError(t, err)
	requireProblem(t, many.ApplicationProblemJSON422, http.StatusUnprocessableEntity, client.ProblemCodeIdempotencyMismatch)
	bob := claimKeyed(t, e.user("bob"), "ck", "claim-1", req)
	requireProblem(t, bob.ApplicationProblemJSON422, http.StatusUnprocessableEntity, client.ProblemCodeIdempotencyMismatch)
	require.Equal(t, client.NodeStatusQueued, e.nodeOf("b").Status, "a mismatch claims nothing")

	// Once the claim has ended, the key answers nothing and claims nothing.
	e.mustComplete(alice, "a", nil)
	ended := claimKeyed(t, alice, "ck", "claim-1", req)
	require.Equal(t, http.StatusNoContent, ended.StatusCode(), string(ended.Body))
	require.Equal(t, client.NodeStatusQueued, e.nodeOf("b").Status)

	// A fresh key claims the next node.
	next := claimKeyed(t, alice, "ck", "claim-2", req)
	require.Equal(t, http.StatusOK, next.StatusCode(), string(next.Body))
	require.Equal(t, "b", next.JSON200.Node.ID)

	bad, b := e.rawWithHeaders(http.MethodPost, "/v1/queues/ck/claim", e.token("acme", "alice"), `{}`,
		map[string]string{"Idempotency-Key": "has space", "Content-Type": "application/json"})
	require.Equal(t, http.StatusBadRequest, bad.StatusCode, string(b))
	require.Contains(t, string(b), "Idempotency-Key")
}

func TestClaimKeyOfAnExpiredClaimClaimsNothing(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.mustCreate(client.NodeCreate{ID: ptr("x"), Type: "task", Queue: ptr("exp"), MaxAttempts: ptr(int64(5))})
	alice := e.user("alice")
	req := client.ClaimNextRequest{TTLMS: ptr(int64(1000))}
	first := claimKeyed(t, alice, "exp", "k", req)
	require.Equal(t, http.StatusOK, first.StatusCode(), string(first.Body))

	e.advanceAndReap(2 * time.Second)
	again := claimKeyed(t, alice, "exp", "k", req)
	require.Equal(t, http.StatusNoContent, again.StatusCode(), "the claim expired: %s", again.Body)
	n := e.nodeOf("x")
	require.Equal(t, client.NodeStatusQueued, n.Status, "the key took no new claim of the node")
	require.Equal(t, int64(1), n.Attempts)

	// Another identity's claim of the node, under the same fence count, is
	// not the key's either.
	bob := mustClaimNext(t, e.user("bob"), "exp", client.ClaimNextRequest{})
	require.Equal(t, "x", bob.Node.ID)
	still := claimKeyed(t, alice, "exp", "k", req)
	require.Equal(t, http.StatusNoContent, still.StatusCode(), string(still.Body))
}

func TestClaimKeyAfterNothingReadyMayClaim(t *testing.T) {
	t.Parallel()
	e := start(t)
	alice := e.user("alice")
	empty := claimKeyed(t, alice, "later", "k", client.ClaimNextRequest{})
	require.Equal(t, http.StatusNoContent, empty.StatusCode(), string(empty.Body))

	e.mustCreate(client.NodeCreate{ID: ptr("n1"), Type: "task", Queue: ptr("later")})
	e.mustCreate(client.NodeCreate{ID: ptr("n2"), Type: "task", Queue: ptr("later")})
	got := claimKeyed(t, alice, "later", "k", client.ClaimNextRequest{})
	require.Equal(t, http.StatusOK, got.StatusCode(), "an empty answer was not recorded: %s", got.Body)
	again := claimKeyed(t, alice, "later", "k", client.ClaimNextRequest{})
	require.Equal(t, http.StatusOK, again.StatusCode(), string(again.Body))
	require.Equal(t, got.JSON200.Node.ID, again.JSON200.Node.ID)
	require.Equal(t, got.JSON200.Lease.Fence, again.JSON200.Lease.Fence)
}

func TestClaimKeyLongPollRecordsTheClaimItMade(t *testing.T) {
	t.Parallel()
	e := start(t)
	alice := e.user("alice")
	parked := &e.srv.Nodes.TestSignals.Parked
	parked.Init(t)
	req := client.ClaimNextRequest{WaitMS: ptr(int64(60000))}
	ch := make(chan *client.ClaimNextResponse, 1)
	go func() {
		res, err := alice.ClaimNextWithResponse(context.Background(), "lp", req, withKey("poll"))
		if err != nil {
			res = nil
		}
		ch <- res
	}()
	parked.WaitFor(t, func(q string) bool { return q == "lp" })
	e.mustCreate(client.NodeCreate{ID: ptr("p1"), Type: "task", Queue: ptr("lp")})
	e.mustCreate(client.NodeCreate{ID: ptr("p2"), Type: "task", Queue: ptr("lp")})
	var first *client.ClaimNextResponse
	select {
	case first = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll never answered")
	}
	require.NotNil(t, first)
	require.Equal(t, http.StatusOK, first.StatusCode(), string(first.Body))

	again := claimKeyed(t, alice, "lp", "poll", req)
	require.Equal(t, http.StatusOK, again.StatusCode(), string(again.Body))
	require.Equal(t, first.JSON200.Node.ID, again.JSON200.Node.ID)
	require.Equal(t, first.JSON200.Lease.Fence, again.JSON200.Lease.Fence)
}

func TestClaimKeysArePerTenantAndApartFromCreateKeys(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	// A create under key "shared" in acme.
	created, err := e.dispatcher().CreateNodeWithResponse(ctx, &client.CreateNodeParams{IdempotencyKey: ptr("shared")},
		client.NodeCreate{ID: ptr("acme-1"), Type: "task", Queue: ptr("q")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, created.StatusCode(), string(created.Body))
	other := e.as(e.token("other", "head", "dispatcher"))
	oc, err := other.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("other-1"), Type: "task", Queue: ptr("q")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, oc.StatusCode(), string(oc.Body))

	acme := claimKeyed(t, e.user("w"), "q", "shared", client.ClaimNextRequest{})
	require.Equal(t, http.StatusOK, acme.StatusCode(), "a create's key is not a claim's: %s", acme.Body)
	require.Equal(t, "acme-1", acme.JSON200.Node.ID)
	theirs := claimKeyed(t, e.as(e.token("other", "w")), "q", "shared", client.ClaimNextRequest{})
	require.Equal(t, http.StatusOK, theirs.StatusCode(), "another tenant's key is its own: %s", theirs.Body)
	require.Equal(t, "other-1", theirs.JSON200.Node.ID)

	// And the create key still replays its create.
	again, err := e.dispatcher().CreateNodeWithResponse(ctx, &client.CreateNodeParams{IdempotencyKey: ptr("shared")},
		client.NodeCreate{ID: ptr("acme-1"), Type: "task", Queue: ptr("q")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, again.StatusCode(), string(again.Body))
}

func TestClaimKeyOnClaimsRepeatsWhatIsStillHeld(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	for _, id := range []string{"m1", "m2", "m3", "m4", "m5"} {
		e.mustCreate(client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("mq")})
	}
	alice := e.user("alice")
	req := client.ClaimManyRequest{Max: ptr(3), WaitMS: ptr(int64(0))}
	first, err := alice.ClaimNextManyWithResponse(ctx, "mq", req, withKey("many"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, first.StatusCode(), string(first.Body))
	require.Len(t, first.JSON200.Items, 3)

	again, err := alice.ClaimNextManyWithResponse(ctx, "mq", req, withKey("many"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, again.StatusCode(), string(again.Body))
	require.Equal(t, ids(first.JSON200.Items), ids(again.JSON200.Items), "the same nodes, in the same order")
	for i, it := range again.JSON200.Items {
		require.Equal(t, first.JSON200.Items[i].Lease.Fence, it.Lease.Fence)
	}

	// One of them is released: the repeat leaves it out and takes no other.
	gone := first.JSON200.Items[1]
	rel, err := alice.ReleaseNodeWithResponse(ctx, gone.Node.ID, client.ReleaseRequest{Fence: ptr(gone.Lease.Fence)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, rel.StatusCode(), string(rel.Body))
	after, err := alice.ClaimNextManyWithResponse(ctx, "mq", req, withKey("many"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, after.StatusCode(), string(after.Body))
	require.Equal(t, []string{first.JSON200.Items[0].Node.ID, first.JSON200.Items[2].Node.ID}, ids(after.JSON200.Items))

	queued := 0
	for _, id := range []string{"m1", "m2", "m3", "m4", "m5"} {
		n := e.nodeOf(id)
		if n.Status == client.NodeStatusQueued {
			queued++
		}
		require.LessOrEqual(t, n.Attempts, int64(1), "node %s", id)
	}
	require.Equal(t, 3, queued, "two held, the released one and the two never claimed are queued")
}
