package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

func TestClaimRenewExtendCompleteWalkthrough(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(task("t1"))
	alice := e.user("alice")

	claim, err := alice.ClaimNodeWithResponse(ctx, "t1", client.ClaimRequest{Session: ptr("run-42"), TTLMS: ptr(int64(60000))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))
	cr := claim.JSON200
	require.True(t, cr.Ok)
	require.False(t, cr.Renewed)
	require.Equal(t, client.NodeStatusRunning, cr.Status)
	require.Equal(t, "alice", cr.Lease.By)
	require.Equal(t, "run-42", *cr.Lease.Session)
	require.EqualValues(t, 1, cr.Lease.Fence)
	require.EqualValues(t, 60000, cr.Lease.TTLMS)
	require.Equal(t, cr.Lease.ExpiresAt.UnixMilli(), cr.Lease.Expires, "expires and expires_at are one instant")
	require.Equal(t, e.clk.Now().Add(time.Minute).UnixMilli(), cr.Lease.Expires)
	require.Equal(t, "assigned", cr.Edge.Type)
	require.Equal(t, "identity:alice", cr.Edge.To)
	require.EqualValues(t, 1, cr.Node.Attempts)
	require.Nil(t, cr.CappedToMax)

	e.clk.Advance(20 * time.Second)
	renew, err := alice.RenewLeaseWithResponse(ctx, "t1", client.RenewRequest{Fence: ptr(int64(1))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, renew.StatusCode(), string(renew.Body))
	require.Equal(t, e.clk.Now().Add(time.Minute).UnixMilli(), renew.JSON200.Lease.Expires)
	require.EqualValues(t, 0, renew.JSON200.InboxUnread)

	ext, err := alice.ExtendLeaseWithResponse(ctx, "t1", client.ExtendRequest{MS: 600000})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ext.StatusCode(), string(ext.Body))
	require.Equal(t, renew.JSON200.Lease.Expires+600000, ext.JSON200.Lease.Expires)

	capped, err := alice.ExtendLeaseWithResponse(ctx, "t1", client.ExtendRequest{MS: 100 * 3600000})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, capped.StatusCode(), string(capped.Body))
	require.True(t, *capped.JSON200.CappedToMax)
	require.EqualValues(t, 7200000, *capped.JSON200.ClaimTTLMaxMS)
	require.Equal(t, e.clk.Now().Add(2*time.Hour).UnixMilli(), capped.JSON200.Lease.Expires)

	tok := e.token("acme", "alice")
	for _, body := range []string{`{"ms":0}`, `{"ms":-5}`, `{"ms":1.5}`, `{}`} {
		resp, b := e.raw(http.MethodPost, "/v1/nodes/t1/extend", tok, "application/json", body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", body, b)
	}

	done, err := alice.CompleteNodeWithResponse(ctx, "t1", client.CompleteRequest{Fence: ptr(int64(1)), Result: map[string]any{"pr": 7}, Usage: &client.Usage{"tokens": 1200}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
	require.Equal(t, client.NodeStatusDone, done.JSON200.Node.Status)
	require.Nil(t, done.JSON200.Node.Lease)
	require.EqualValues(t, 1200, done.JSON200.Node.UsageTotal["tokens"])

	again, err := alice.CompleteNodeWithResponse(ctx, "t1", client.CompleteRequest{Fence: ptr(int64(1)), Result: map[string]any{"pr": 7}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, again.StatusCode(), "a retried completion answers 200 again")
	require.Equal(t, done.JSON200.Node.Version, again.JSON200.Node.Version, "and changes nothing")

	bob, err := e.user("bob").CompleteNodeWithResponse(ctx, "t1", client.CompleteRequest{})
	require.NoError(t, err)
	requireProblem(t, bob.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)

	hist, err := alice.ListNodeEdgesWithResponse(ctx, "t1", &client.ListNodeEdgesParams{Type: ptr("assigned"), IncludeRetired: ptr(true)})
	require.NoError(t, err)
	require.Len(t, hist.JSON200.Items, 1)
	require.Equal(t, "done", hist.JSON200.Items[0].Props["outcome"])
	require.EqualValues(t, 1, hist.JSON200.Items[0].Props["fence"])
}

func TestClaimConflictsAndNotClaimable(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(task("dep"))
	e.mustCreate(client.NodeCreate{ID: ptr("waits"), Type: "task", Queue: ptr("default"), DependsOn: &[]string{"dep"}})
	e.mustCreate(client.NodeCreate{ID: ptr("later"), Type: "task", Queue: ptr("default"), DelayMS: ptr(int64(60000))})
	alice, bob := e.user("alice"), e.user("bob")

	first, err := alice.ClaimNodeWithResponse(ctx, "dep", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, first.StatusCode())

	taken, err := bob.ClaimNodeWithResponse(ctx, "dep", client.ClaimRequest{})
	require.NoError(t, err)
	p := taken.ApplicationProblemJSON409
	requireProblem(t, p, http.StatusConflict, client.ProblemCodeConflict)
	require.Equal(t, "alice", *p.Holder)
	require.Equal(t, first.JSON200.Lease.Expires, *p.Expires)
	require.Equal(t, first.JSON200.Lease.ExpiresAt.UnixMilli(), p.ExpiresAt.UnixMilli())

	blocked, err := bob.ClaimNodeWithResponse(ctx, "waits", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, blocked.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeNotClaimable)
	require.Equal(t, "blocked", blocked.ApplicationProblemJSON409.Reason)
	require.Equal(t, []string{"dep"}, blocked.ApplicationProblemJSON409.BlockedBy)

	delayed, err := bob.ClaimNodeWithResponse(ctx, "later", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, delayed.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeNotClaimable)
	require.Equal(t, "delayed", delayed.ApplicationProblemJSON409.Reason)
	require.Equal(t, e.clk.Now().Add(time.Minute).UnixMilli(), delayed.ApplicationProblemJSON409.RunAt.UnixMilli())
	e.clk.Advance(time.Minute)
	now, err := bob.ClaimNodeWithResponse(ctx, "later", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, now.StatusCode(), "claimable once run_at passed")

	_, err = alice.CompleteNodeWithResponse(ctx, "dep", client.CompleteRequest{})
	require.NoError(t, err)
	terminal, err := bob.ClaimNodeWithResponse(ctx, "dep", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, terminal.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeNotClaimable)
	require.Equal(t, "terminal", terminal.ApplicationProblemJSON409.Reason)
	unblocked, err := bob.ClaimNodeWithResponse(ctx, "waits", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, unblocked.StatusCode(), "ready once its dependency is done")

	missing, err := bob.ClaimNodeWithResponse(ctx, "nope", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, missing.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
}

func TestReleaseHandoffOverrideAndStaleFence(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(task("r1"))
	alice, bob, carol := e.user("alice"), e.user("bob"), e.user("carol")

	_, err := alice.ClaimNodeWithResponse(ctx, "r1", client.ClaimRequest{})
	require.NoError(t, err)
	notYours, err := bob.ReleaseNodeWithResponse(ctx, "r1", client.ReleaseRequest{})
	require.NoError(t, err)
	requireProblem(t, notYours.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeConflict)
	require.Equal(t, "alice", *notYours.ApplicationProblemJSON409.Holder)

	stale, err := alice.ReleaseNodeWithResponse(ctx, "r1", client.ReleaseRequest{Fence: ptr(int64(9))})
	require.NoError(t, err)
	requireProblem(t, stale.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)

	handoff, err := alice.ReleaseNodeWithResponse(ctx, "r1", client.ReleaseRequest{To: ptr("carol"), Reason: ptr("carol knows this code")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, handoff.StatusCode(), string(handoff.Body))
	require.Equal(t, client.NodeStatusQueued, handoff.JSON200.Status)
	reserved, err := bob.ClaimNodeWithResponse(ctx, "r1", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, reserved.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeConflict)
	got, err := carol.ClaimNodeWithResponse(ctx, "r1", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, got.StatusCode(), string(got.Body))
	require.EqualValues(t, 1, got.JSON200.Node.Attempts, "the handed-off attempt was given back")
	require.EqualValues(t, 2, got.JSON200.Lease.Fence)

	again, err := alice.ReleaseNodeWithResponse(ctx, "r1", client.ReleaseRequest{})
	require.NoError(t, err)
	requireProblem(t, again.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeConflict)
	require.Equal(t, "carol", *again.ApplicationProblemJSON409.Holder, "a late release names who holds the node now")

	override, err := e.dispatcher().ReleaseNodeWithResponse(ctx, "r1", client.ReleaseRequest{Reason: ptr("rebalancing")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, override.StatusCode(), string(override.Body))
	lost, err := carol.RenewLeaseWithResponse(ctx, "r1", client.RenewRequest{})
	require.NoError(t, err)
	requireProblem(t, lost.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	require.Nil(t, lost.ApplicationProblemJSON409.Holder, "nobody holds it now")
	require.Contains(t, string(lost.Body), `"holder":null`)

	hist, err := carol.ListNodeEdgesWithResponse(ctx, "identity:carol", &client.ListNodeEdgesParams{Dir: ptr(client.EdgeDirectionIn), Type: ptr("assigned"), IncludeRetired: ptr(true)})
	require.NoError(t, err)
	require.Len(t, hist.JSON200.Items, 1)
	require.Equal(t, "taken_over", hist.JSON200.Items[0].Props["outcome"])
}

func TestStatusEndpointVerbs(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(task("s1"))
	e.mustCreate(task("s2"))
	w := e.user("left_claw")
	for _, verb := range []client.StatusRequestStatus{client.StatusRequestStatusInProgress, client.StatusRequestStatusInProgressHyphen, client.StatusRequestStatusRunning} {
		res, err := w.SetNodeStatusWithResponse(ctx, "s1", client.StatusRequest{Status: verb})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Equal(t, client.NodeStatusRunning, res.JSON200.Status)
	}
	rel, err := w.SetNodeStatusWithResponse(ctx, "s1", client.StatusRequest{Status: client.StatusRequestStatusTodo})
	require.NoError(t, err)
	require.Equal(t, client.NodeStatusQueued, rel.JSON200.Status)
	_, err = w.SetNodeStatusWithResponse(ctx, "s1", client.StatusRequest{Status: client.StatusRequestStatusRunning})
	require.NoError(t, err)
	done, err := w.SetNodeStatusWithResponse(ctx, "s1", client.StatusRequest{Status: client.StatusRequestStatusDone, Result: "ok"})
	require.NoError(t, err)
	require.Equal(t, client.NodeStatusDone, done.JSON200.Status)

	forbidden, err := w.SetNodeStatusWithResponse(ctx, "s2", client.StatusRequest{Status: client.StatusRequestStatusCancelled})
	require.NoError(t, err)
	requireProblem(t, forbidden.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	cancelled, err := e.dispatcher().SetNodeStatusWithResponse(ctx, "s2", client.StatusRequest{Status: client.StatusRequestStatusCancelled})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, cancelled.StatusCode(), string(cancelled.Body))
	require.Equal(t, []string{"s2"}, *cancelled.JSON200.Cancelled)

	resp, body := e.raw(http.MethodPost, "/v1/nodes/s2/status", e.token("acme", "w"), "application/json", `{"status":"finished"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
}

func TestExpiredLeaseIsReapedWithinTheInterval(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(client.NodeCreate{ID: ptr("x1"), Type: "task", Queue: ptr("default"), MaxAttempts: ptr(int64(2))})
	alice, bob := e.user("alice"), e.user("bob")

	_, err := alice.ClaimNodeWithResponse(ctx, "x1", client.ClaimRequest{TTLMS: ptr(int64(5000))})
	require.NoError(t, err)
	e.watchReaper()
	e.clk.Advance(5 * time.Second)
	lost, err := alice.RenewLeaseWithResponse(ctx, "x1", client.RenewRequest{})
	require.NoError(t, err)
	requireProblem(t, lost.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	e.waitReaped()
	requeued, err := bob.GetNodeWithResponse(ctx, "x1")
	require.NoError(t, err)
	require.Equal(t, client.NodeStatusQueued, requeued.JSON200.Status, "requeued by the reaper as soon as the deadline passed")

	second, err := bob.ClaimNodeWithResponse(ctx, "x1", client.ClaimRequest{TTLMS: ptr(int64(5000))})
	require.NoError(t, err)
	require.EqualValues(t, 2, second.JSON200.Lease.Fence)
	e.advanceAndReap(5 * time.Second)
	dead, err := bob.GetNodeWithResponse(ctx, "x1")
	require.NoError(t, err)
	require.Equal(t, client.NodeStatusDead, dead.JSON200.Status, "dead once max_attempts runs expired")

	hist, err := bob.ListNodeEdgesWithResponse(ctx, "x1", &client.ListNodeEdgesParams{Type: ptr("assigned"), IncludeRetired: ptr(true), Dir: ptr(client.EdgeDirectionOut)})
	require.NoError(t, err)
	require.Len(t, hist.JSON200.Items, 2)
	for _, edge := range hist.JSON200.Items {
		require.Equal(t, "expired", edge.Props["outcome"])
	}
}

func TestConcurrentClaimsExactlyOneWins(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	const nodes, workers = 5, 32
	for i := 0; i < nodes; i++ {
		e.mustCreate(task(fmt.Sprintf("race-%d", i)))
	}
	clients := make([]*client.ClientWithResponses, workers)
	for w := range clients {
		clients[w] = e.user(fmt.Sprintf("worker-%d", w))
	}
	for i := 0; i < nodes; i++ {
		id := fmt.Sprintf("race-%d", i)
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins, conflicts := 0, 0
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(c *client.ClientWithResponses) {
				defer wg.Done()
				res, err := c.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				switch res.StatusCode() {
				case http.StatusOK:
					wins++
				case http.StatusConflict:
					conflicts++
				default:
					t.Errorf("unexpected %d: %s", res.StatusCode(), res.Body)
				}
			}(clients[w])
		}
		wg.Wait()
		require.Equal(t, 1, wins, "exactly one claimer wins %s", id)
		require.Equal(t, workers-1, conflicts)
	}
	leases, err := e.dispatcher().ListLeasesWithResponse(ctx, &client.ListLeasesParams{Limit: ptr(2)})
	require.NoError(t, err)
	require.Len(t, leases.JSON200.Items, 2)
	require.NotNil(t, leases.JSON200.NextCursor)
	rest, err := e.dispatcher().ListLeasesWithResponse(ctx, &client.ListLeasesParams{Cursor: leases.JSON200.NextCursor})
	require.NoError(t, err)
	require.Len(t, rest.JSON200.Items, nodes-2)
}

func TestLeasesListFiltersByHolderAndQueue(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(task("a"))
	e.mustCreate(client.NodeCreate{ID: ptr("b"), Type: "task", Queue: ptr("other")})
	_, err := e.user("alice").ClaimNodeWithResponse(ctx, "a", client.ClaimRequest{})
	require.NoError(t, err)
	_, err = e.user("bob").ClaimNodeWithResponse(ctx, "b", client.ClaimRequest{})
	require.NoError(t, err)
	r := e.user("viewer", "reader")
	mine, err := r.ListLeasesWithResponse(ctx, &client.ListLeasesParams{Holder: ptr("alice")})
	require.NoError(t, err)
	require.Len(t, mine.JSON200.Items, 1)
	require.Equal(t, "a", mine.JSON200.Items[0].NodeID)
	other, err := r.ListLeasesWithResponse(ctx, &client.ListLeasesParams{Queue: ptr("other")})
	require.NoError(t, err)
	require.Len(t, other.JSON200.Items, 1)
	require.Equal(t, "bob", other.JSON200.Items[0].By)
	denied, err := r.ClaimNodeWithResponse(ctx, "a", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, denied.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
}
