package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// completeNext completes id as c, holding fence, and asks for the next claim
// of next.Queue in the same call.
func completeNext(t *testing.T, c *client.ClientWithResponses, id string, fence int64, next client.NextClaimRequest) *client.CompleteNodeResponse {
	t.Helper()
	res, err := c.CompleteNodeWithResponse(context.Background(), id, client.CompleteRequest{Fence: ptr(fence), Next: &next})
	require.NoError(t, err)
	return res
}

// nodeStatus reads id's status as the dispatcher sees it.
func (e *env) nodeStatus(id string) client.NodeStatus {
	e.t.Helper()
	res, err := e.dispatcher().GetNodeWithResponse(context.Background(), id)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Status
}

// Plain nodes (no parent, no dependents): each next is claimed in the
// completion's own transaction.
func TestCompleteWithNextClaimsInClaimOrder(t *testing.T) {
	t.Parallel()
	e := start(t)
	for i, id := range []string{"low", "high", "mid"} {
		e.mustCreate(client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("q"), Priority: ptr([]int64{0, 9, 5}[i])})
	}
	alice := e.user("alice")
	cur := mustClaimNext(t, alice, "q", client.ClaimNextRequest{})
	require.Equal(t, "high", cur.Node.ID)

	var got []string
	for {
		res := completeNext(t, alice, cur.Node.ID, cur.Lease.Fence, client.NextClaimRequest{Queue: "q"})
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		done := res.JSON200
		require.True(t, done.Ok)
		require.Equal(t, client.NodeStatusDone, done.Status)
		require.Equal(t, cur.Node.ID, done.Node.ID)
		require.Equal(t, client.NodeStatusDone, done.Node.Status)
		require.Equal(t, client.NodeStatusDone, e.nodeStatus(cur.Node.ID), "the completion is made, whatever the claim does")
		if done.Next == nil {
			require.Contains(t, string(res.Body), `"next":null`, "asked for next: the member is there, null when nothing is ready")
			break
		}
		next := done.Next
		require.True(t, next.Ok)
		require.False(t, next.Renewed)
		require.Equal(t, client.NodeStatusRunning, next.Status)
		require.Equal(t, "alice", next.Lease.By)
		require.Equal(t, next.Node.ID, next.Lease.NodeID)
		require.Equal(t, "identity:alice", next.Edge.To)
		require.Equal(t, client.NodeStatusRunning, e.nodeStatus(next.Node.ID))
		got = append(got, next.Node.ID)
		cur = next
	}
	require.Equal(t, []string{"mid", "low"}, got, "highest priority first, as claim-next")
	requireNothing(t, alice, "q", client.ClaimNextRequest{})

	// Without next, the answer has no next member at all.
	e.mustCreate(task("plain"))
	plain, err := alice.ClaimNodeWithResponse(context.Background(), "plain", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, plain.StatusCode(), string(plain.Body))
	res, err := alice.CompleteNodeWithResponse(context.Background(), "plain", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.NotContains(t, string(res.Body), `"next"`)
}

// A completion that changes another node (here a dependent's blockers) is
// applied before the claim is tried, so the claim sees what it made ready:
// a node waiting on the one completed.
func TestCompleteWithNextSeesWhatTheCompletionUnblocked(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.mustCreate(client.NodeCreate{ID: ptr("first"), Type: "task", Queue: ptr("q")})
	e.mustCreate(client.NodeCreate{ID: ptr("second"), Type: "task", Queue: ptr("q"), DependsOn: &[]string{"first"}})
	alice := e.user("alice")
	cur := mustClaimNext(t, alice, "q", client.ClaimNextRequest{})
	require.Equal(t, "first", cur.Node.ID)
	res := completeNext(t, alice, "first", cur.Lease.Fence, client.NextClaimRequest{Queue: "q"})
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.NotNil(t, res.JSON200.Next)
	require.Equal(t, "second", res.JSON200.Next.Node.ID)
}

func TestCompleteWithNextFiltersTTLAndSession(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.mustCreate(client.NodeCreate{ID: ptr("a"), Type: "task", Queue: ptr("q")})
	e.mustCreate(client.NodeCreate{ID: ptr("plain"), Type: "task", Queue: ptr("q"), Priority: ptr(int64(9))})
	e.mustCreate(client.NodeCreate{ID: ptr("gpu-mail"), Type: "mail", Queue: ptr("q"), Labels: &[]string{"gpu"}})
	e.mustCreate(client.NodeCreate{ID: ptr("gpu-task"), Type: "task", Queue: ptr("q"), Labels: &[]string{"gpu"}})
	alice := e.user("alice")
	cur, err := alice.ClaimNodeWithResponse(context.Background(), "a", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, cur.StatusCode(), string(cur.Body))
	res := completeNext(t, alice, "a", cur.JSON200.Lease.Fence, client.NextClaimRequest{
		Queue: "q", Types: &[]string{"task"}, Labels: &[]string{"gpu"}, TTLMS: ptr(int64(60000)), Session: ptr("run-7"),
	})
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	next := res.JSON200.Next
	require.NotNil(t, next)
	require.Equal(t, "gpu-task", next.Node.ID, "type and labels filter as claim-next's do; plain has the higher priority but no gpu label")
	require.Equal(t, int64(60000), next.Lease.TTLMS)
	require.NotNil(t, next.Lease.Session)
	require.Equal(t, "run-7", *next.Lease.Session)
}

func TestCompleteWithNextLongPolls(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.mustCreate(client.NodeCreate{ID: ptr("only"), Type: "task", Queue: ptr("q")})
	alice := e.user("alice")
	cur := mustClaimNext(t, alice, "q", client.ClaimNextRequest{})

	type answer struct {
		res *client.CompleteNodeResponse
		err error
	}
	ch := make(chan answer, 1)
	e.srv.Nodes.TestSignals.Parked.Init(t)
	go func() {
		res, err := alice.CompleteNodeWithResponse(context.Background(), "only", client.CompleteRequest{
			Fence: ptr(cur.Lease.Fence), Next: &client.NextClaimRequest{Queue: "q", WaitMS: ptr(int64(5000))},
		})
		ch <- answer{res, err}
	}()
	// The completion lands before the poll parks: once it is parked, the
	// call is still waiting for a next node.
	e.srv.Nodes.TestSignals.Parked.WaitFor(t, func(q string) bool { return q == "q" })
	require.Equal(t, client.NodeStatusDone, e.nodeStatus("only"))
	select {
	case a := <-ch:
		t.Fatalf("answered before a node was ready: %v %s", a.err, a.res.Body)
	default:
	}
	_, parkedWoken := e.srv.Store.ReadyWaiters("acme", "q")
	e.mustCreate(client.NodeCreate{ID: ptr("fresh"), Type: "task", Queue: ptr("q")})
	created := time.Now()
	var a answer
	select {
	case a = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll never answered")
	}
	require.NoError(t, a.err)
	require.Equal(t, http.StatusOK, a.res.StatusCode(), string(a.res.Body))
	require.Equal(t, "only", a.res.JSON200.Node.ID)
	require.NotNil(t, a.res.JSON200.Next)
	require.Equal(t, "fresh", a.res.JSON200.Next.Node.ID)
	_, woken := e.srv.Store.ReadyWaiters("acme", "q")
	require.Greater(t, woken, parkedWoken, "the create woke the poll")
	require.Less(t, time.Since(created), wakeBound)

	// Nothing becomes ready: next is null once wait_ms has passed.
	res := completeNext(t, alice, "fresh", a.res.JSON200.Next.Lease.Fence, client.NextClaimRequest{Queue: "q", WaitMS: ptr(int64(200))})
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Nil(t, res.JSON200.Next)
	require.Equal(t, client.NodeStatusDone, e.nodeStatus("fresh"))
}

// A completion that fails claims nothing; a retried completion that had
// succeeded answers 200 again and claims.
func TestCompleteWithNextFailedCompletionClaimsNothing(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.mustCreate(client.NodeCreate{ID: ptr("held"), Type: "task", Queue: ptr("q"), Priority: ptr(int64(9))})
	e.mustCreate(client.NodeCreate{ID: ptr("waiting"), Type: "task", Queue: ptr("q")})
	alice, bob := e.user("alice"), e.user("bob")
	cur := mustClaimNext(t, alice, "q", client.ClaimNextRequest{})
	require.Equal(t, "held", cur.Node.ID)

	stale := completeNext(t, alice, "held", cur.Lease.Fence+1, client.NextClaimRequest{Queue: "q"})
	require.Equal(t, http.StatusConflict, stale.StatusCode(), string(stale.Body))
	requireProblem(t, stale.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	notHers := completeNext(t, bob, "held", cur.Lease.Fence, client.NextClaimRequest{Queue: "q"})
	require.Equal(t, http.StatusConflict, notHers.StatusCode(), string(notHers.Body))
	require.Equal(t, client.NodeStatusRunning, e.nodeStatus("held"))
	require.Equal(t, client.NodeStatusQueued, e.nodeStatus("waiting"), "a failed completion claims nothing")

	ok := completeNext(t, alice, "held", cur.Lease.Fence, client.NextClaimRequest{Queue: "q"})
	require.Equal(t, http.StatusOK, ok.StatusCode(), string(ok.Body))
	require.Equal(t, "waiting", ok.JSON200.Next.Node.ID)
	again := completeNext(t, alice, "held", cur.Lease.Fence, client.NextClaimRequest{Queue: "q"})
	require.Equal(t, http.StatusOK, again.StatusCode(), "a completion retried answers 200 again: %s", again.Body)
	require.Nil(t, again.JSON200.Next, "and claims what is ready, here nothing")
}

// A bad next is refused at decode, before the completion: nothing changes.
func TestCompleteWithBadNextChangesNothing(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.mustCreate(client.NodeCreate{ID: ptr("held"), Type: "task", Queue: ptr("q"), Priority: ptr(int64(9))})
	e.mustCreate(client.NodeCreate{ID: ptr("waiting"), Type: "task", Queue: ptr("q")})
	alice := e.user("alice")
	cur := mustClaimNext(t, alice, "q", client.ClaimNextRequest{})
	tok := e.token("acme", "alice")
	for _, tc := range []struct{ body, field string }{
		{`{"next":{}}`, "next.queue"},
		{`{"next":{"queue":""}}`, "next.queue"},
		{`{"next":{"queue":"has space"}}`, "next.queue"},
		{`{"next":{"queue":"q","wait_ms":60001}}`, "next.wait_ms"},
		{`{"next":{"queue":"q","ttl_ms":0}}`, "next.ttl_ms"},
		{`{"next":{"queue":"q","max":5}}`, "next.max"},
		{`{"next":{"queue":"q","wait_ms":"5"}}`, "next.wait_ms"},
		{`{"next":"q"}`, "next"},
	} {
		res, body := e.raw("POST", "/v1/nodes/held/complete", tok, "application/json", tc.body)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "%s: %s", tc.body, body)
		var p struct {
			Code  string `json:"code"`
			Field string `json:"field"`
		}
		require.NoError(t, json.Unmarshal(body, &p))
		require.Equal(t, "bad_request", p.Code, tc.body)
		require.Equal(t, tc.field, p.Field, "%s: %s", tc.body, body)
	}
	require.Equal(t, client.NodeStatusRunning, e.nodeStatus("held"))
	require.Equal(t, client.NodeStatusQueued, e.nodeStatus("waiting"))

	// A batch op cannot ask for next: that op fails on its own.
	res, body := e.raw("POST", "/v1/batch", tok, "application/json",
		fmt.Sprintf(`{"ops":[{"op":"complete","id":"held","fence":%d,"next":{"queue":"q"}}]}`, cur.Lease.Fence))
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	var out struct {
		Results []struct {
			Status int `json:"status"`
			Body   struct {
				Field  string `json:"field"`
				Detail string `json:"detail"`
			} `json:"body"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(body, &out))
	require.Len(t, out.Results, 1)
	require.Equal(t, http.StatusBadRequest, out.Results[0].Status, string(body))
	require.Equal(t, "next", out.Results[0].Body.Field)
	require.True(t, strings.Contains(out.Results[0].Body.Detail, "claims"), out.Results[0].Body.Detail)
	require.Equal(t, client.NodeStatusRunning, e.nodeStatus("held"))
	require.Equal(t, client.NodeStatusQueued, e.nodeStatus("waiting"))
}

// A claim in the completion's own transaction counts the lease and running
// slot the completion gives back as taken; finding no room, it runs again once
// the completion is applied: an identity at its lease cap, or a queue at its
// max_running, still gets its next node.
func TestCompleteWithNextAtTheCaps(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	res, err := e.admin().PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{MaxLeasesPerIdentity: client.Value(int64(1))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	set, err := e.dispatcher().UpdateQueueWithResponse(ctx, "q", client.QueuePatch{MaxRunning: ptr(int64(1))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, set.StatusCode(), string(set.Body))
	for _, id := range []string{"c1", "c2", "c3"} {
		e.mustCreate(client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("q")})
		e.clk.Advance(time.Millisecond)
	}
	alice := e.user("alice")
	cur := mustClaimNext(t, alice, "q", client.ClaimNextRequest{})
	requireNothing(t, e.user("bob"), "q", client.ClaimNextRequest{}) // the queue is at max_running
	for _, want := range []string{"c2", "c3"} {
		done := completeNext(t, alice, cur.Node.ID, cur.Lease.Fence, client.NextClaimRequest{Queue: "q"})
		require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
		require.NotNil(t, done.JSON200.Next, "at both caps, the completion's lease no longer counts: %s", done.Body)
		require.Equal(t, want, done.JSON200.Next.Node.ID)
		cur = done.JSON200.Next
	}
}
