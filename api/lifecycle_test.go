package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// node reads a node with the dispatcher.
func (e *env) node(id string) client.Node {
	e.t.Helper()
	res, err := e.dispatcher().GetNodeWithResponse(context.Background(), id)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), "%s: %s", id, res.Body)
	return *res.JSON200
}

// mustClaim claims id for c (ttl 0: the tenant default) and returns the answer.
func (e *env) mustClaim(c *client.ClientWithResponses, id string, ttlMS int64) client.ClaimResponse {
	e.t.Helper()
	body := client.ClaimRequest{}
	if ttlMS > 0 {
		body.TTLMS = ptr(ttlMS)
	}
	res, err := c.ClaimNodeWithResponse(context.Background(), id, body)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), "claim %s: %s", id, res.Body)
	return *res.JSON200
}

// mustComplete completes id for c with usage (nil: none).
func (e *env) mustComplete(c *client.ClientWithResponses, id string, usage client.Usage) client.Node {
	e.t.Helper()
	body := client.CompleteRequest{}
	if usage != nil {
		body.Usage = &usage
	}
	res, err := c.CompleteNodeWithResponse(context.Background(), id, body)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), "complete %s: %s", id, res.Body)
	return res.JSON200.Node
}

// mustFail fails id for c and returns the answer.
func (e *env) mustFail(c *client.ClientWithResponses, id string, body client.FailRequest) client.NodeAnswer {
	e.t.Helper()
	res, err := c.FailNodeWithResponse(context.Background(), id, body)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), "fail %s: %s", id, res.Body)
	return *res.JSON200
}

// requireNotClaimable claims id for c and expects 409 not_claimable with reason.
func (e *env) requireNotClaimable(c *client.ClientWithResponses, id, reason string) *client.Problem {
	e.t.Helper()
	res, err := c.ClaimNodeWithResponse(context.Background(), id, client.ClaimRequest{})
	require.NoError(e.t, err)
	requireProblem(e.t, res.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeNotClaimable)
	require.Equal(e.t, reason, res.ApplicationProblemJSON409.Reason, "%s: %s", id, res.Body)
	return res.ApplicationProblemJSON409
}

// requireLeaseLost renews id for c and expects 409 lease_lost.
func (e *env) requireLeaseLost(c *client.ClientWithResponses, id string) *client.Problem {
	e.t.Helper()
	res, err := c.RenewLeaseWithResponse(context.Background(), id, client.RenewRequest{})
	require.NoError(e.t, err)
	requireProblem(e.t, res.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	return res.ApplicationProblemJSON409
}

// assignedOutcomes are the outcomes of every assigned edge of id, oldest first.
func (e *env) assignedOutcomes(id string) []any {
	e.t.Helper()
	res, err := e.dispatcher().ListNodeEdgesWithResponse(context.Background(), id, &client.ListNodeEdgesParams{
		Dir: ptr(client.EdgeDirectionOut), Type: ptr("assigned"), IncludeRetired: ptr(true),
	})
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	out := make([]any, len(res.JSON200.Items))
	for i, edge := range res.JSON200.Items {
		out[i] = edge.Props["outcome"]
	}
	return out
}

// nodeEvents are the events of one node, oldest first.
func (e *env) nodeEvents(id string) []client.Event {
	e.t.Helper()
	res, err := e.dispatcher().ListNodeEventsWithResponse(context.Background(), id, &client.ListNodeEventsParams{Limit: ptr(1000)})
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200.Items
}

func child(id, parent string) client.NodeCreate {
	return client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("default"), Parent: ptr(parent)}
}

func TestFailRequiresErrorAndRequeuesByDefault(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(task("f1"))
	alice, bob := e.user("alice"), e.user("bob")
	first := e.mustClaim(alice, "f1", 60000)

	tok := e.token("acme", "alice")
	for name, body := range map[string]string{
		"no body":       ``,
		"empty":         `{}`,
		"no error":      `{"requeue":false}`,
		"empty error":   `{"error":""}`,
		"error not str": `{"error":42}`,
		"unknown field": `{"error":"boom","typo":true}`,
		"negative wait": `{"error":"boom","retry_in_ms":-1}`,
		"bad requeue":   `{"error":"boom","requeue":"no"}`,
		"malformed":     `{"error":`,
	} {
		resp, b := e.raw(http.MethodPost, "/v1/nodes/f1/fail", tok, "application/json", body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", name, b)
		require.Contains(t, string(b), `"code":"bad_request"`, name)
	}
	require.Equal(t, client.NodeStatusRunning, e.node("f1").Status, "a rejected fail changes nothing")

	notYours, err := bob.FailNodeWithResponse(ctx, "f1", client.FailRequest{Error: "not mine"})
	require.NoError(t, err)
	requireProblem(t, notYours.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	require.Equal(t, "alice", *notYours.ApplicationProblemJSON409.Holder)
	stale, err := alice.FailNodeWithResponse(ctx, "f1", client.FailRequest{Error: "boom", Fence: ptr(int64(9))})
	require.NoError(t, err)
	requireProblem(t, stale.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)

	res := e.mustFail(alice, "f1", client.FailRequest{Error: "tests are red", Fence: ptr(first.Lease.Fence)})
	require.True(t, res.Ok)
	require.Equal(t, client.NodeStatusQueued, res.Status)
	n := res.Node
	require.Equal(t, client.NodeStatusQueued, n.Status)
	require.EqualValues(t, 1, n.Attempts, "the failed attempt is kept")
	require.Equal(t, "tests are red", *n.Error)
	require.Nil(t, n.Lease)
	// No retry_in_ms: the tenant's default backoff (5 s) with equal jitter.
	require.NotNil(t, n.RunAt, "the default backoff delays the retry")
	requireBetween(t, n.RunAt.Sub(e.clk.Now()), 2500*time.Millisecond, 5*time.Second)
	require.Equal(t, &client.Backoff{InitialMS: 5000, MaxMS: 600000, Factor: 2}, n.Backoff, "the default is the node's own")
	require.False(t, n.Ready)
	e.clk.Advance(5 * time.Second)
	require.True(t, e.node("f1").Ready)
	require.Equal(t, []any{"failed"}, e.assignedOutcomes("f1"))
	lost := e.requireLeaseLost(alice, "f1")
	require.Nil(t, lost.Holder)

	evs := e.nodeEvents("f1")
	last := evs[len(evs)-1]
	require.Equal(t, client.EventTypeFailed, last.Type)
	require.Equal(t, "alice", last.By)
	require.Equal(t, "tests are red", last.Data["error"])

	again := e.mustClaim(bob, "f1", 0)
	require.EqualValues(t, 2, again.Node.Attempts, "claimable again, and the retry counts")
	require.EqualValues(t, 2, again.Lease.Fence)
	require.Nil(t, again.Node.Error, "a new run clears the error")
}

func TestFailRetryInMSAndBackoffDelayTheRetry(t *testing.T) {
	t.Parallel()
	e := start(t)
	alice := e.user("alice")

	e.mustCreate(task("later"))
	e.mustClaim(alice, "later", 0)
	res := e.mustFail(alice, "later", client.FailRequest{Error: "rate limited", RetryInMS: ptr(int64(60000))})
	require.Equal(t, client.NodeStatusQueued, res.Node.Status)
	runAt := e.clk.Now().Add(time.Minute)
	require.NotNil(t, res.Node.RunAt)
	require.Equal(t, runAt.UnixMilli(), res.Node.RunAt.UnixMilli())
	require.False(t, res.Node.Ready)
	p := e.requireNotClaimable(alice, "later", "delayed")
	require.Equal(t, runAt.UnixMilli(), p.RunAt.UnixMilli())
	e.clk.Advance(time.Minute - time.Millisecond)
	e.requireNotClaimable(e.user("bob"), "later", "delayed")
	e.clk.Advance(time.Millisecond)
	require.True(t, e.node("later").Ready)
	e.mustClaim(e.user("bob"), "later", 0)

	// backoff: initial_ms * factor^(attempts-1), capped at max_ms, with
	// equal jitter: from half of it to all of it.
	e.mustCreate(client.NodeCreate{ID: ptr("flaky"), Type: "task", Queue: ptr("default"),
		Backoff: &client.Backoff{InitialMS: 1000, Factor: 2, MaxMS: 3000}})
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
		e.mustClaim(alice, "flaky", 0)
		res := e.mustFail(alice, "flaky", client.FailRequest{Error: "flaky"})
		require.EqualValues(t, i+1, res.Node.Attempts)
		require.Equal(t, client.NodeStatusQueued, res.Node.Status)
		require.NotNil(t, res.Node.RunAt, "failure %d", i+1)
		wait := res.Node.RunAt.Sub(e.clk.Now())
		requireBetween(t, wait, want/2, want)
		e.clk.Advance(wait - time.Millisecond)
		e.requireNotClaimable(alice, "flaky", "delayed")
		e.clk.Advance(time.Millisecond)
	}
	e.mustClaim(alice, "flaky", 0)

	// An explicit retry_in_ms wins over the backoff; 0 means at once.
	now := e.mustFail(alice, "flaky", client.FailRequest{Error: "retry now", RetryInMS: ptr(int64(0))})
	require.True(t, now.Node.Ready, "retry_in_ms 0 retries at once: %+v", now.Node.RunAt)
}

func TestFailTerminalDeadOverrideAndEvents(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	alice, bob := e.user("alice"), e.user("bob")

	e.mustCreate(task("broken"))
	e.mustClaim(alice, "broken", 0)
	res := e.mustFail(alice, "broken", client.FailRequest{Error: "cannot be done", Requeue: ptr(false)})
	require.Equal(t, client.NodeStatusFailed, res.Status)
	require.Equal(t, client.NodeStatusFailed, res.Node.Status)
	require.Equal(t, "cannot be done", *res.Node.Error)
	require.False(t, res.Node.Ready)
	e.requireNotClaimable(bob, "broken", "terminal")
	require.Equal(t, []any{"failed"}, e.assignedOutcomes("broken"))

	e.mustCreate(client.NodeCreate{ID: ptr("twice"), Type: "task", Queue: ptr("default"), MaxAttempts: ptr(int64(2))})
	e.mustClaim(alice, "twice", 0)
	first := e.mustFail(alice, "twice", client.FailRequest{Error: "first"})
	require.Equal(t, client.NodeStatusQueued, first.Node.Status, "attempts 1 < max_attempts 2")
	e.clk.Advance(5 * time.Second) // the default backoff
	e.mustClaim(bob, "twice", 0)
	second := e.mustFail(bob, "twice", client.FailRequest{Error: "second"})
	require.Equal(t, client.NodeStatusDead, second.Status, "the second failed run of two is the last")
	require.Equal(t, client.NodeStatusDead, second.Node.Status)
	require.EqualValues(t, 2, second.Node.Attempts)
	require.Equal(t, "second", *second.Node.Error)
	e.requireNotClaimable(alice, "twice", "terminal")
	require.Equal(t, []any{"failed", "failed"}, e.assignedOutcomes("twice"))
	types := eventTypes(e.nodeEvents("twice"))
	require.Equal(t, []client.EventType{client.EventTypeFailed, client.EventTypeDead}, types[len(types)-2:])
	failed := 0
	for _, ty := range types {
		if ty == client.EventTypeFailed {
			failed++
		}
	}
	require.Equal(t, 2, failed, "one failed event per failed run: %v", types)

	// A dispatcher may fail another identity's lease.
	e.mustCreate(task("stuck"))
	e.mustClaim(alice, "stuck", 0)
	notYours, err := bob.FailNodeWithResponse(ctx, "stuck", client.FailRequest{Error: "mine now"})
	require.NoError(t, err)
	requireProblem(t, notYours.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	over := e.mustFail(e.dispatcher(), "stuck", client.FailRequest{Error: "agent wedged", Requeue: ptr(false)})
	require.Equal(t, client.NodeStatusFailed, over.Node.Status)
	e.requireLeaseLost(alice, "stuck")
	require.Equal(t, []any{"failed"}, e.assignedOutcomes("stuck"))
	evs := e.nodeEvents("stuck")
	require.Equal(t, "head", evs[len(evs)-1].By)

	missing, err := alice.FailNodeWithResponse(ctx, "nope", client.FailRequest{Error: "x"})
	require.NoError(t, err)
	requireProblem(t, missing.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
}

func TestProgressRecordsRenewsAndRollsUpUsage(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	alice, bob := e.user("alice"), e.user("bob")
	e.mustCreate(task("epic"))
	e.mustCreate(child("step", "epic"))
	claim := e.mustClaim(alice, "step", 60000)

	e.clk.Advance(30 * time.Second)
	res, err := alice.ReportProgressWithResponse(ctx, "step", client.ProgressRequest{
		Pct: ptr(float32(40)), Message: ptr("reading the code"), Usage: &client.Usage{"tokens": 7},
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	pr := res.JSON200
	require.True(t, pr.Ok)
	require.Equal(t, client.NodeStatusRunning, pr.Status)
	require.Equal(t, e.clk.Now().Add(time.Minute).UnixMilli(), pr.Lease.Expires, "progress renews the lease")
	require.Equal(t, claim.Lease.Fence, pr.Lease.Fence)
	require.NotNil(t, pr.Node.Progress)
	require.EqualValues(t, 40, *pr.Node.Progress.Pct)
	require.Equal(t, "reading the code", *pr.Node.Progress.Message)
	require.EqualValues(t, 7, pr.Node.Usage["tokens"])
	require.EqualValues(t, 7, pr.Node.UsageTotal["tokens"])

	got := e.node("step")
	require.NotNil(t, got.Progress)
	require.EqualValues(t, 40, *got.Progress.Pct)
	require.Equal(t, "reading the code", *got.Progress.Message)
	require.Equal(t, e.clk.Now().UnixMilli(), got.Progress.UpdatedAt.UnixMilli())
	require.Equal(t, pr.Lease.Expires, got.Lease.Expires)
	parent := e.node("epic")
	require.EqualValues(t, 7, parent.UsageTotal["tokens"], "usage rolls up to the parent's usage_total")
	require.Empty(t, parent.Usage, "but not into the parent's own usage")

	// Past the claim's original expiry the lease lives on: progress was a heartbeat.
	e.clk.Advance(45 * time.Second)
	renew, err := alice.RenewLeaseWithResponse(ctx, "step", client.RenewRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, renew.StatusCode(), string(renew.Body))

	again, err := alice.ReportProgressWithResponse(ctx, "step", client.ProgressRequest{Pct: ptr(float32(80)), Usage: &client.Usage{"tokens": 3, "cost": 0.5}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, again.StatusCode(), string(again.Body))
	require.EqualValues(t, 80, *again.JSON200.Node.Progress.Pct)
	require.EqualValues(t, 10, again.JSON200.Node.Usage["tokens"])
	parent = e.node("epic")
	require.EqualValues(t, 10, parent.UsageTotal["tokens"])
	require.EqualValues(t, 0.5, parent.UsageTotal["cost"])

	var progress []client.Event
	for _, ev := range e.nodeEvents("step") {
		if ev.Type == client.EventTypeProgress {
			progress = append(progress, ev)
		}
	}
	require.Len(t, progress, 2)
	require.EqualValues(t, 40, progress[0].Data["pct"])
	require.Equal(t, "reading the code", progress[0].Data["message"])
	require.Equal(t, "alice", progress[0].By)
	require.EqualValues(t, 80, progress[1].Data["pct"])

	for _, pct := range []float32{101, -1} {
		bad, err := alice.ReportProgressWithResponse(ctx, "step", client.ProgressRequest{Pct: ptr(pct)})
		require.NoError(t, err)
		requireProblem(t, bad.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	}
	tok := e.token("acme", "alice")
	for _, body := range []string{`{"pct":"half"}`, `{"typo":1}`, `{"usage":{"tokens":"many"}}`} {
		resp, b := e.raw(http.MethodPost, "/v1/nodes/step/progress", tok, "application/json", body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", body, b)
	}
	require.EqualValues(t, 80, *e.node("step").Progress.Pct, "a rejected report changes nothing")

	notYours, err := bob.ReportProgressWithResponse(ctx, "step", client.ProgressRequest{Pct: ptr(float32(90))})
	require.NoError(t, err)
	requireProblem(t, notYours.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	require.Equal(t, "alice", *notYours.ApplicationProblemJSON409.Holder)
	idle, err := bob.ReportProgressWithResponse(ctx, "epic", client.ProgressRequest{Pct: ptr(float32(1))})
	require.NoError(t, err)
	requireProblem(t, idle.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
}

func TestRequeueTerminalNodes(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	alice := e.user("alice")
	for _, id := range []string{"rq-failed", "rq-cancelled", "rq-queued", "rq-running", "rq-done"} {
		e.mustCreate(task(id))
	}
	e.mustCreate(client.NodeCreate{ID: ptr("rq-dead"), Type: "task", Queue: ptr("default"), MaxAttempts: ptr(int64(1))})

	e.mustClaim(alice, "rq-failed", 0)
	e.mustFail(alice, "rq-failed", client.FailRequest{Error: "no", Requeue: ptr(false)})
	e.mustClaim(alice, "rq-dead", 0)
	dead := e.mustFail(alice, "rq-dead", client.FailRequest{Error: "out of attempts"})
	require.Equal(t, client.NodeStatusDead, dead.Node.Status)
	cancel, err := d.CancelNodeWithResponse(ctx, "rq-cancelled", client.CancelRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, cancel.StatusCode(), string(cancel.Body))
	e.mustClaim(alice, "rq-running", 0)
	e.mustClaim(alice, "rq-done", 0)
	e.mustComplete(alice, "rq-done", nil)

	denied, err := alice.RequeueNodeWithResponse(ctx, "rq-failed", client.RequeueRequest{})
	require.NoError(t, err)
	requireProblem(t, denied.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	require.Equal(t, client.NodeStatusFailed, e.node("rq-failed").Status)

	for _, id := range []string{"rq-failed", "rq-dead", "rq-cancelled"} {
		res, err := d.RequeueNodeWithResponse(ctx, id, client.RequeueRequest{Reason: ptr("try again")})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), "%s: %s", id, res.Body)
		require.True(t, res.JSON200.Ok)
		require.Equal(t, client.NodeStatusQueued, res.JSON200.Status, id)
		n := res.JSON200.Node
		require.Equal(t, client.NodeStatusQueued, n.Status, id)
		require.EqualValues(t, 0, n.Attempts, id)
		require.Nil(t, n.Error, id)
		require.Contains(t, string(res.Body), `"error":null`, id)
		require.True(t, n.Ready, id)
		evs := e.nodeEvents(id)
		require.Equal(t, client.EventTypeRequeued, evs[len(evs)-1].Type, id)
	}
	again := e.mustClaim(alice, "rq-dead", 0)
	require.EqualValues(t, 1, again.Node.Attempts, "a requeued dead node runs again")

	for _, id := range []string{"rq-queued", "rq-running", "rq-done"} {
		before := e.node(id)
		res, err := d.RequeueNodeWithResponse(ctx, id, client.RequeueRequest{})
		require.NoError(t, err)
		requireProblem(t, res.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeConflict)
		require.Equal(t, before.Version, e.node(id).Version, "%s: a refused requeue changes nothing", id)
	}
	missing, err := d.RequeueNodeWithResponse(ctx, "nope", client.RequeueRequest{})
	require.NoError(t, err)
	requireProblem(t, missing.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
}

func TestTimeoutEndsARunHoweverOftenRenewed(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	alice := e.user("alice")
	e.mustCreate(client.NodeCreate{ID: ptr("slow"), Type: "task", Queue: ptr("default"), TimeoutMS: ptr(int64(10000))})
	claim := e.mustClaim(alice, "slow", 5000)
	require.EqualValues(t, 10000, *claim.Node.TimeoutMS)

	for range 2 { // t = 4 s, 8 s
		e.clk.Advance(4 * time.Second)
		res, err := alice.RenewLeaseWithResponse(ctx, "slow", client.RenewRequest{Fence: ptr(claim.Lease.Fence)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), "renewed before the timeout at %s: %s", e.clk.Now(), res.Body)
	}
	e.watchReaper()
	e.clk.Advance(4 * time.Second) // t = 12 s: the lease would live to 13 s, the run ended at 10 s
	lost := e.requireLeaseLost(alice, "slow")
	require.Nil(t, lost.Holder)
	e.waitReaped()
	n := e.node("slow")
	require.Equal(t, client.NodeStatusQueued, n.Status, "the reaper requeues a timed-out run")
	require.Equal(t, "timeout", *n.Error)
	require.Nil(t, n.Lease)
	require.EqualValues(t, 1, n.Attempts)
	require.Equal(t, []any{"expired"}, e.assignedOutcomes("slow"))
	evs := e.nodeEvents("slow")
	last := evs[len(evs)-1]
	require.Equal(t, client.EventTypeExpired, last.Type)
	require.Equal(t, "timeout", last.Data["error"])
	require.Equal(t, "system", last.By)
	leases, err := e.dispatcher().ListLeasesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, leases.JSON200.Items)

	next := e.mustClaim(e.user("bob"), "slow", 5000)
	require.EqualValues(t, 2, next.Lease.Fence, "claimable again at once")
}

func TestFanOutThreeLevelsBottomUpWithUsage(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	const q = "fan"
	in := func(id, parent string) client.NodeCreate {
		return client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr(q), Parent: ptr(parent)}
	}
	e.mustCreate(client.NodeCreate{ID: ptr("R"), Type: "task", Queue: ptr(q)})
	e.mustCreate(client.NodeCreate{ID: ptr("other"), Type: "task", Queue: ptr(q)})
	w0 := e.user("w0")
	stranger := e.user("stranger")

	// fanOut: w claims (or holds) parent, creates two children of it and releases it.
	fanOut := func(w *client.ClientWithResponses, parent string, kids ...string) {
		t.Helper()
		for _, k := range kids {
			res, err := w.CreateNodeWithResponse(ctx, nil, in(k, parent))
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.StatusCode(), "a holder creates children: %s", res.Body)
			require.Equal(t, parent, *res.JSON201.Parent)
		}
		rel, err := w.ReleaseNodeWithResponse(ctx, parent, client.ReleaseRequest{Reason: ptr("fanned out")})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rel.StatusCode(), string(rel.Body))
		require.Equal(t, client.NodeStatusQueued, rel.JSON200.Status)
		p := e.node(parent)
		require.False(t, p.Ready)
		require.ElementsMatch(t, kids, p.BlockedBy)
		blocked := e.requireNotClaimable(w, parent, "blocked")
		require.ElementsMatch(t, kids, blocked.BlockedBy)
	}

	e.mustClaim(w0, "R", 0)
	notHeld, err := stranger.CreateNodeWithResponse(ctx, nil, in("intruder", "R"))
	require.NoError(t, err)
	requireProblem(t, notHeld.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	unheld, err := w0.CreateNodeWithResponse(ctx, nil, in("intruder", "other"))
	require.NoError(t, err)
	requireProblem(t, unheld.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	orphan, err := w0.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("intruder"), Type: "task", Queue: ptr(q)})
	require.NoError(t, err)
	requireProblem(t, orphan.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	fanOut(w0, "R", "C1", "C2")

	w1, w2 := e.user("w1"), e.user("w2")
	e.mustClaim(w1, "C1", 0)
	e.mustClaim(w2, "C2", 0)
	fanOut(w1, "C1", "G1a", "G1b")
	fanOut(w2, "C2", "G2a", "G2b")
	e.requireNotClaimable(w0, "R", "blocked")

	// Only the leaves are handed out by the queue.
	w3 := e.user("w3")
	many, err := w3.ClaimNextManyWithResponse(ctx, q, client.ClaimManyRequest{Max: ptr(10)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, many.StatusCode(), string(many.Body))
	var leaves []string
	for _, it := range many.JSON200.Items {
		leaves = append(leaves, it.Node.ID)
	}
	require.ElementsMatch(t, []string{"G1a", "G1b", "G2a", "G2b", "other"}, leaves)

	e.mustComplete(w3, "G1a", client.Usage{"tokens": 10})
	e.requireNotClaimable(w1, "C1", "blocked")
	require.Equal(t, []string{"G1b"}, e.node("C1").BlockedBy)
	e.mustComplete(w3, "G1b", client.Usage{"tokens": 10})
	e.mustComplete(w3, "G2a", client.Usage{"tokens": 10})
	e.mustComplete(w3, "G2b", client.Usage{"tokens": 10})
	e.requireNotClaimable(w0, "R", "blocked")

	for _, id := range []string{"C1", "C2"} {
		c := e.node(id)
		require.True(t, c.Ready, "%s is ready once its children are done", id)
		require.Empty(t, c.BlockedBy)
		require.EqualValues(t, 20, c.UsageTotal["tokens"])
		require.Empty(t, c.Usage)
	}
	require.EqualValues(t, 40, e.node("R").UsageTotal["tokens"])

	next, err := w1.ClaimNextWithResponse(ctx, q, client.ClaimNextRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, next.StatusCode(), string(next.Body))
	require.Contains(t, []string{"C1", "C2"}, next.JSON200.Node.ID, "the queue hands out a child before the root")
	require.EqualValues(t, 1, next.JSON200.Node.Attempts, "the fan-out release gave its attempt back")
	first := next.JSON200.Node.ID
	second := map[string]string{"C1": "C2", "C2": "C1"}[first]
	c := e.mustComplete(w1, first, client.Usage{"tokens": 1})
	require.EqualValues(t, 21, c.UsageTotal["tokens"])
	require.EqualValues(t, 1, c.Usage["tokens"])
	e.requireNotClaimable(w0, "R", "blocked")
	require.Equal(t, []string{second}, e.node("R").BlockedBy)
	e.mustClaim(w2, second, 0)
	c = e.mustComplete(w2, second, client.Usage{"tokens": 1})
	require.EqualValues(t, 21, c.UsageTotal["tokens"])

	r := e.node("R")
	require.True(t, r.Ready)
	require.EqualValues(t, 42, r.UsageTotal["tokens"], "R = 2 * (1 + 2*10)")
	root := e.mustClaim(w0, "R", 0)
	require.EqualValues(t, 1, root.Node.Attempts)
	r = e.mustComplete(w0, "R", client.Usage{"tokens": 5})
	require.Equal(t, client.NodeStatusDone, r.Status)
	require.EqualValues(t, 5, r.Usage["tokens"])
	require.EqualValues(t, 47, r.UsageTotal["tokens"], "its own usage plus its children's totals")

	// The completions happened bottom-up.
	seq := func(id string) int64 {
		for _, ev := range e.nodeEvents(id) {
			if ev.Type == client.EventTypeCompleted {
				return ev.Seq
			}
		}
		t.Fatalf("%s never completed", id)
		return 0
	}
	for parent, kids := range map[string][]string{"R": {"C1", "C2"}, "C1": {"G1a", "G1b"}, "C2": {"G2a", "G2b"}} {
		for _, k := range kids {
			require.Less(t, seq(k), seq(parent), "%s completed before its parent %s", k, parent)
		}
	}
}

func TestOnChildFailFailsTheParentAndCancelsSiblings(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	wa, wb, wc := e.user("wa"), e.user("wb"), e.user("wc")

	e.mustCreate(task("P"))
	for _, id := range []string{"A", "B", "C"} {
		e.mustCreate(child(id, "P"))
	}
	require.Equal(t, client.OnChildFailFail, e.node("P").OnChildFail, "fail is the default")
	e.mustClaim(wa, "A", 0)
	b := e.mustClaim(wb, "B", 0)
	c := e.mustClaim(wc, "C", 0)

	res := e.mustFail(wa, "A", client.FailRequest{Error: "A broke", Requeue: ptr(false)})
	require.Equal(t, client.NodeStatusFailed, res.Node.Status)
	p := e.node("P")
	require.Equal(t, client.NodeStatusFailed, p.Status)
	require.NotNil(t, p.Error)
	require.Contains(t, *p.Error, "A", "the parent's error names the child")
	for _, id := range []string{"B", "C"} {
		n := e.node(id)
		require.Equal(t, client.NodeStatusCancelled, n.Status, id)
		require.Nil(t, n.Lease, id)
		require.Equal(t, []any{"cancelled"}, e.assignedOutcomes(id), id)
	}
	lostB, err := wb.RenewLeaseWithResponse(ctx, "B", client.RenewRequest{Fence: ptr(b.Lease.Fence)})
	require.NoError(t, err)
	requireProblem(t, lostB.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	lostC, err := wc.CompleteNodeWithResponse(ctx, "C", client.CompleteRequest{Fence: ptr(c.Lease.Fence)})
	require.NoError(t, err)
	requireProblem(t, lostC.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	e.requireNotClaimable(wa, "P", "terminal")
	evs := e.nodeEvents("P")
	require.Equal(t, client.EventTypeFailed, evs[len(evs)-1].Type)
	leases, err := d.ListLeasesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, leases.JSON200.Items)

	// A requeued (retrying) failure is not an end: the parent stays.
	e.mustCreate(task("P1"))
	e.mustCreate(child("R1", "P1"))
	e.mustClaim(wa, "R1", 0)
	e.mustFail(wa, "R1", client.FailRequest{Error: "try again"})
	require.Equal(t, client.NodeStatusQueued, e.node("P1").Status)

	// on_child_fail ignore: the parent carries on.
	e.mustCreate(client.NodeCreate{ID: ptr("Q"), Type: "task", Queue: ptr("default"), OnChildFail: ptr(client.OnChildFailIgnore)})
	for _, id := range []string{"X", "Y"} {
		e.mustCreate(child(id, "Q"))
	}
	e.mustClaim(wa, "X", 0)
	e.mustFail(wa, "X", client.FailRequest{Error: "X broke", Requeue: ptr(false)})
	qn := e.node("Q")
	require.Equal(t, client.NodeStatusQueued, qn.Status)
	require.Nil(t, qn.Error)
	require.Equal(t, []string{"Y"}, qn.BlockedBy, "a failed child no longer blocks")
	require.Equal(t, client.NodeStatusQueued, e.node("Y").Status, "no sibling is cancelled")
	e.mustClaim(wb, "Y", 0)
	e.mustComplete(wb, "Y", nil)
	require.True(t, e.node("Q").Ready, "ready once the other children finish")
	e.mustClaim(wa, "Q", 0)

	// A child that fails into dead (out of attempts) fails its parent too.
	e.mustCreate(task("P5"))
	e.mustCreate(client.NodeCreate{ID: ptr("K5"), Type: "task", Queue: ptr("default"), Parent: ptr("P5"), MaxAttempts: ptr(int64(1))})
	e.mustClaim(wa, "K5", 0)
	require.Equal(t, client.NodeStatusDead, e.mustFail(wa, "K5", client.FailRequest{Error: "last try"}).Node.Status)
	require.Equal(t, client.NodeStatusFailed, e.node("P5").Status)

	// A parent held by a worker (fanning out) loses its lease when it fails.
	e.mustCreate(task("HP"))
	hp := e.mustClaim(wa, "HP", 0)
	kid, err := wa.CreateNodeWithResponse(ctx, nil, child("HK", "HP"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, kid.StatusCode(), string(kid.Body))
	e.mustClaim(wb, "HK", 0)
	e.mustFail(wb, "HK", client.FailRequest{Error: "no", Requeue: ptr(false)})
	require.Equal(t, client.NodeStatusFailed, e.node("HP").Status)
	heldLost, err := wa.RenewLeaseWithResponse(ctx, "HP", client.RenewRequest{Fence: ptr(hp.Lease.Fence)})
	require.NoError(t, err)
	requireProblem(t, heldLost.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	require.Equal(t, []any{"failed"}, e.assignedOutcomes("HP"))

	// The same holds for a parent without a queue (open).
	e.mustCreate(client.NodeCreate{ID: ptr("O"), Type: "task", OnChildFail: ptr(client.OnChildFailIgnore)})
	e.mustCreate(child("OX", "O"))
	e.mustClaim(wa, "OX", 0)
	e.mustFail(wa, "OX", client.FailRequest{Error: "nope", Requeue: ptr(false)})
	on := e.node("O")
	require.Equal(t, client.NodeStatusOpen, on.Status)
	require.True(t, on.Ready)
}

func TestOnChildFailOnExpiryIntoDeadAndOnCancel(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	w := e.user("w")

	// A child that expires into dead fails its parent.
	e.mustCreate(task("P2"))
	e.mustCreate(client.NodeCreate{ID: ptr("K"), Type: "task", Queue: ptr("default"), Parent: ptr("P2"), MaxAttempts: ptr(int64(1))})
	e.mustCreate(child("K2", "P2"))
	e.mustClaim(w, "K", 5000)
	e.advanceAndReap(5 * time.Second)
	require.Equal(t, client.NodeStatusFailed, e.node("P2").Status, "the parent of a child that expired into dead fails")
	require.Equal(t, client.NodeStatusDead, e.node("K").Status)
	require.Contains(t, *e.node("P2").Error, "K")
	require.Equal(t, client.NodeStatusCancelled, e.node("K2").Status, "the remaining child is cancelled")
	require.Equal(t, []any{"expired"}, e.assignedOutcomes("K"))

	// A child that expires with attempts left does not.
	e.mustCreate(task("P4"))
	e.mustCreate(child("K4", "P4"))
	e.mustClaim(w, "K4", 5000)
	e.advanceAndReap(5 * time.Second)
	require.Equal(t, client.NodeStatusQueued, e.node("K4").Status, "a child that expires with attempts left is requeued")
	require.Equal(t, client.NodeStatusQueued, e.node("P4").Status)

	// Cancelling a child fails a parent with on_child_fail fail.
	e.mustCreate(task("P3"))
	e.mustCreate(child("L", "P3"))
	e.mustCreate(child("M", "P3"))
	m := e.mustClaim(w, "M", 0)
	res, err := d.CancelNodeWithResponse(ctx, "L", client.CancelRequest{Reason: ptr("not needed")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Contains(t, res.JSON200.Cancelled, "L")
	require.Equal(t, client.NodeStatusCancelled, e.node("L").Status)
	p3 := e.node("P3")
	require.Equal(t, client.NodeStatusFailed, p3.Status)
	require.Contains(t, *p3.Error, "L")
	require.Equal(t, client.NodeStatusCancelled, e.node("M").Status)
	lost, err := w.RenewLeaseWithResponse(ctx, "M", client.RenewRequest{Fence: ptr(m.Lease.Fence)})
	require.NoError(t, err)
	requireProblem(t, lost.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)

	// ...and it climbs: a grandparent with on_child_fail fail fails too.
	e.mustCreate(task("GP"))
	e.mustCreate(child("PP", "GP"))
	e.mustCreate(child("KK", "PP"))
	e.mustCreate(child("Aunt", "GP"))
	e.mustClaim(w, "KK", 0)
	e.mustFail(w, "KK", client.FailRequest{Error: "deep failure", Requeue: ptr(false)})
	require.Equal(t, client.NodeStatusFailed, e.node("PP").Status)
	require.Equal(t, client.NodeStatusFailed, e.node("GP").Status)
	require.Equal(t, client.NodeStatusCancelled, e.node("Aunt").Status)
}

func TestCancelTreeWithLiveLeases(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	w1, w2, w3, w4 := e.user("w1"), e.user("w2"), e.user("w3"), e.user("w4")

	// root (w1) ─ c1 (w2) ─ g1 (w3), g2 (w4), g3 (queued) ; root ─ c2 (queued) ─ g4 (w3)
	e.mustCreate(task("root"))
	e.mustClaim(w1, "root", 0)
	e.mustCreate(child("c1", "root"))
	e.mustCreate(child("c2", "root"))
	e.mustClaim(w2, "c1", 0)
	for _, g := range []string{"g1", "g2", "g3"} {
		e.mustCreate(child(g, "c1"))
	}
	e.mustCreate(child("g4", "c2"))
	holders := map[string]*client.ClientWithResponses{"root": w1, "c1": w2, "g1": w3, "g2": w4, "g4": w3}
	fences := map[string]int64{}
	for id, w := range holders {
		if id == "root" || id == "c1" {
			fences[id] = e.node(id).Lease.Fence
			continue
		}
		fences[id] = e.mustClaim(w, id, 0).Lease.Fence
	}
	leases, err := d.ListLeasesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Len(t, leases.JSON200.Items, len(holders))

	res, err := d.CancelNodeWithResponse(ctx, "root", client.CancelRequest{Reason: ptr("abandoned")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	all := []string{"root", "c1", "c2", "g1", "g2", "g3", "g4"}
	require.ElementsMatch(t, all, res.JSON200.Cancelled)
	for _, id := range all {
		n := e.node(id)
		require.Equal(t, client.NodeStatusCancelled, n.Status, id)
		require.Nil(t, n.Lease, id)
	}
	for id, w := range holders {
		renew, err := w.RenewLeaseWithResponse(ctx, id, client.RenewRequest{Fence: ptr(fences[id])})
		require.NoError(t, err)
		requireProblem(t, renew.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
		done, err := w.CompleteNodeWithResponse(ctx, id, client.CompleteRequest{Fence: ptr(fences[id])})
		require.NoError(t, err)
		requireProblem(t, done.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
		require.Equal(t, []any{"cancelled"}, e.assignedOutcomes(id), id)
	}
	for _, id := range []string{"c2", "g3"} {
		require.Empty(t, e.assignedOutcomes(id), "%s was never claimed", id)
	}
	leases, err = d.ListLeasesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, leases.JSON200.Items)
	for _, sub := range []string{"w1", "w2", "w3", "w4"} {
		mine, err := d.ListLeasesWithResponse(ctx, &client.ListLeasesParams{Holder: ptr(sub)})
		require.NoError(t, err)
		require.Empty(t, mine.JSON200.Items, sub)
	}
}

func TestCancelAnswerListsSiblingsCancelledByTheParentFailing(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.mustCreate(task("P"))
	e.mustCreate(child("L", "P"))
	e.mustCreate(child("M", "P"))
	res, err := e.dispatcher().CancelNodeWithResponse(context.Background(), "L", client.CancelRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Equal(t, client.NodeStatusCancelled, e.node("M").Status)
	require.ElementsMatch(t, []string{"L", "M"}, res.JSON200.Cancelled, "every id that became cancelled")
}

// requireBetween checks lo <= d <= hi, to the millisecond the API keeps.
func requireBetween(t *testing.T, d, lo, hi time.Duration) {
	t.Helper()
	d = d.Round(time.Millisecond)
	require.True(t, d >= lo && d <= hi, "%s is not within [%s, %s]", d, lo, hi)
}
