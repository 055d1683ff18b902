package api_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/clock/clocktest"
)

func TestConcurrencyLimitCountsSurviveARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC))
	e, stop := startOn(t, dir, clk)
	d, w := e.dispatcher(), e.user("w1", "worker")
	putLimit(t, d, "gpu", client.ConcurrencyLimitPut{MaxRunning: ptr(int64(2))})
	for i := range 4 {
		e.mustCreate(keyed("g"+strconv.Itoa(i), "rs", "gpu"))
	}
	mustClaimNext(t, w, "rs", client.ClaimNextRequest{})
	mustClaimNext(t, w, "rs", client.ClaimNextRequest{})
	stop()

	e2, _ := startOn(t, dir, clk)
	w2 := e2.user("w1", "worker")
	res := claimNext(t, w2, "rs", client.ClaimNextRequest{WaitMS: ptr(int64(0))})
	require.Equal(t, http.StatusNoContent, res.StatusCode(), "both slots are still held after the restart")
	lim, err := e2.dispatcher().ListLimitsWithResponse(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, int64(2), lim.JSON200.Items[0].Running)
	require.Equal(t, int64(2), *lim.JSON200.Items[0].MaxRunning)
}

func TestPrefixLimitHoldsPerDistinctKeyAndQueueDefault(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d, w := e.dispatcher(), e.user("w1", "worker")
	putLimit(t, d, "repo:*", client.ConcurrencyLimitPut{MaxRunning: ptr(int64(1))})
	for i, k := range []string{"repo:a", "repo:a", "repo:b", "repo:b", "other", "other", "other"} {
		e.mustCreate(keyed("p"+strconv.Itoa(i), "pq", k))
	}
	// The queue's default holds for keys without a limit of their own.
	q, err := d.UpdateQueueWithResponse(ctx, "pq", client.QueuePatch{MaxRunningPerKey: ptr(int64(2))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, q.StatusCode(), string(q.Body))
	require.Equal(t, int64(2), *q.JSON200.MaxRunningPerKey)
	var got []string
	for {
		res := claimNext(t, w, "pq", client.ClaimNextRequest{WaitMS: ptr(int64(0))})
		if res.StatusCode() == http.StatusNoContent {
			break
		}
		got = append(got, res.JSON200.Node.ID)
	}
	require.Equal(t, []string{"p0", "p2", "p4", "p5"}, got, "one per repo, two of other")
	lim, err := d.ListLimitsWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), lim.JSON200.Items[0].Running, "the busiest matching key")
	require.Equal(t, int64(2), *lim.JSON200.Items[0].RunningKeys)
}

func TestStartRateWaitsForTheBucket(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d, w := e.dispatcher(), e.user("w1", "worker")
	putLimit(t, d, "provider:openai", client.ConcurrencyLimitPut{Rate: &client.Rate{PerSecond: 1, Burst: 1}})
	for i := range 3 {
		e.mustCreate(keyed("r"+strconv.Itoa(i), "rq", "provider:openai"))
	}
	// The bucket starts empty: a token comes after a second.
	res, err := w.ClaimNodeWithResponse(ctx, "r0", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, res.ApplicationProblemJSON409, http.StatusConflict, "start_rate_limited")
	require.Equal(t, int64(1000), *res.ApplicationProblemJSON409.RetryAfterMS)
	require.Equal(t, "1", res.HTTPResponse.Header.Get("Retry-After"))

	none := claimNext(t, w, "rq", client.ClaimNextRequest{WaitMS: ptr(int64(0))})
	require.Equal(t, http.StatusNoContent, none.StatusCode())
	require.Equal(t, `start_rate_limited; key="provider:openai"`, none.HTTPResponse.Header.Get("Tether-Throttled"))

	// A long poll waits for the token instead of answering 204 early.
	e.srv.Nodes.TestSignals.Parked.Init(t)
	poll := make(chan *client.ClaimNextResponse, 1)
	go func() {
		r, err := w.ClaimNextWithResponse(ctx, "rq", client.ClaimNextRequest{WaitMS: ptr(int64(30000))})
		if err != nil {
			t.Error(err)
		}
		poll <- r
	}()
	e.srv.Nodes.TestSignals.Parked.WaitFor(t, func(q string) bool { return q == "rq" })
	e.clk.Advance(time.Second)
	got := <-poll
	require.Equal(t, http.StatusOK, got.StatusCode(), string(got.Body))
	// One token a second, burst one: the next is refused again.
	again := claimNext(t, w, "rq", client.ClaimNextRequest{WaitMS: ptr(int64(0))})
	require.Equal(t, http.StatusNoContent, again.StatusCode())
	// Ten seconds later the bucket holds only its burst: one grant.
	e.clk.Advance(10 * time.Second)
	mustClaimNext(t, w, "rq", client.ClaimNextRequest{})
	require.Equal(t, http.StatusNoContent, claimNext(t, w, "rq", client.ClaimNextRequest{WaitMS: ptr(int64(0))}).StatusCode())
}

func TestBudgetExhaustsAndRollsOver(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d, w := e.dispatcher(), e.user("w1", "worker")
	b, err := d.PutBudgetWithResponse(ctx, "team:x", client.BudgetPut{Usage: "tokens", Limit: 100, WindowMS: 3600000})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, b.StatusCode(), string(b.Body))
	for i := range 3 {
		e.mustCreate(keyed("u"+strconv.Itoa(i), "bq", "team:x"))
	}
	first := mustClaimNext(t, w, "bq", client.ClaimNextRequest{})
	done, err := w.CompleteNodeWithResponse(ctx, first.Node.ID, client.CompleteRequest{Usage: &client.Usage{"tokens": 150}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))

	list, err := d.ListBudgetsWithResponse(ctx, nil)
	require.NoError(t, err)
	it := list.JSON200.Items[0]
	require.Equal(t, 150.0, it.Spent)
	require.True(t, it.Exhausted)

	res, err := w.ClaimNodeWithResponse(ctx, "u1", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, res.ApplicationProblemJSON409, http.StatusConflict, "budget_exhausted")
	require.True(t, res.ApplicationProblemJSON409.WindowEnd.Equal(it.WindowEnd))
	none := claimNext(t, w, "bq", client.ClaimNextRequest{WaitMS: ptr(int64(0))})
	require.Equal(t, http.StatusNoContent, none.StatusCode())
	require.Equal(t, `budget_exhausted; key="team:x"`, none.HTTPResponse.Header.Get("Tether-Throttled"))

	// The next window starts from nothing.
	e.clk.Advance(it.WindowEnd.Sub(e.clk.Now()))
	mustClaimNext(t, w, "bq", client.ClaimNextRequest{})
	list, err = d.ListBudgetsWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Zero(t, list.JSON200.Items[0].Spent)
	require.False(t, list.JSON200.Items[0].Exhausted)
}

func TestFlowBadInputIsRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("acme", "head", "dispatcher")
	long := make([]byte, 257)
	for i := range long {
		long[i] = 'k'
	}
	for _, c := range []struct{ method, path, body, field string }{
		{http.MethodPut, "/v1/limits/k", `{"max_running":0}`, "max_running"},
		{http.MethodPut, "/v1/limits/k", `{"max_running":-1}`, "max_running"},
		{http.MethodPut, "/v1/limits/k", `{}`, "max_running"},
		{http.MethodPut, "/v1/limits/k", `{"rate":{"per_second":0,"burst":1}}`, "rate.per_second"},
		{http.MethodPut, "/v1/limits/k", `{"rate":{"per_second":1e300,"burst":1}}`, "rate.per_second"},
		{http.MethodPut, "/v1/limits/k", `{"rate":{"per_second":1,"burst":0}}`, "rate.burst"},
		{http.MethodPut, "/v1/limits/" + string(long), `{"max_running":1}`, "key"},
		{http.MethodPut, "/v1/limits/a%01b", `{"max_running":1}`, "key"},
		{http.MethodPut, "/v1/budgets/k", `{"usage":"to ken","limit":1,"window_ms":60000}`, "usage"},
		{http.MethodPut, "/v1/budgets/k", `{"usage":"tokens","limit":0,"window_ms":60000}`, "limit"},
		{http.MethodPut, "/v1/budgets/k", `{"usage":"tokens","limit":1,"window_ms":10}`, "window_ms"},
		{http.MethodPut, "/v1/budgets/k*", `{"usage":"tokens","limit":1,"window_ms":60000}`, "key"},
		{http.MethodPatch, "/v1/queues/q", `{"max_running_per_key":-1}`, "max_running_per_key"},
		{http.MethodPatch, "/v1/queues/q", `{"rate":{"per_second":-1,"burst":1}}`, "rate.per_second"},
		{http.MethodPost, "/v1/nodes", `{"type":"t","queue":"q","concurrency_keys":["a","b","c","d","e","f","g","h","i"]}`, "concurrency_keys"},
		{http.MethodPost, "/v1/nodes", `{"type":"t","queue":"q","concurrency_keys":["a\u0007"]}`, "concurrency_keys[0]"},
		{http.MethodPost, "/v1/nodes", `{"type":"t","queue":"q","concurrency_keys":["` + string(long) + `"]}`, "concurrency_keys[0]"},
		{http.MethodPost, "/v1/nodes", `{"type":"t","queue":"q","concurrency_keys":[""]}`, "concurrency_keys[0]"},
	} {
		resp, body := e.raw(c.method, c.path, tok, "application/json", c.body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s %s %s: %s", c.method, c.path, c.body, body)
		require.Contains(t, string(body), `"field":"`+c.field+`"`, "%s %s %s", c.method, c.path, c.body)
	}
	d := e.dispatcher()
	ctx := context.Background()
	lim, err := d.ListLimitsWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, lim.JSON200.Items, "nothing stored")
	bud, err := d.ListBudgetsWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, bud.JSON200.Items, "nothing stored")
	nodes, err := d.ListNodesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, nodes.JSON200.Items, "nothing stored")
}
