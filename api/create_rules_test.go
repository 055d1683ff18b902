package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/clock/clocktest"
)

func uniqueTask(key string, rule func(*client.UniqueRule)) client.NodeCreate {
	u := client.UniqueRule{Key: key}
	if rule != nil {
		rule(&u)
	}
	return client.NodeCreate{Type: "task", Queue: ptr("q"), Unique: &u}
}

// create posts body as the dispatcher and returns the status and the node.
func (e *env) create(body client.NodeCreate) (int, client.Node) {
	e.t.Helper()
	res, err := e.dispatcher().CreateNodeWithResponse(context.Background(), nil, body)
	require.NoError(e.t, err)
	switch res.StatusCode() {
	case http.StatusOK:
		return http.StatusOK, *res.JSON200
	case http.StatusCreated:
		return http.StatusCreated, *res.JSON201
	}
	e.t.Fatalf("create answered %d: %s", res.StatusCode(), res.Body)
	return 0, client.Node{}
}

func (e *env) countNodes(tok string) int {
	e.t.Helper()
	res, err := e.as(tok).ListNodesWithResponse(context.Background(), nil)
	require.NoError(e.t, err)
	return len(res.JSON200.Items)
}

// A create with a unique key answers the node made under it (200,
// duplicate_of) within its window, and makes a new one after the window;
// keys are per tenant.
func TestUniqueAnswersTheNodeWithinItsWindow(t *testing.T) {
	t.Parallel()
	e := start(t)
	rule := func(u *client.UniqueRule) { u.WindowMS = ptr(int64(60000)) }
	status, first := e.create(uniqueTask("report:2026-01", rule))
	require.Equal(t, http.StatusCreated, status)
	require.Nil(t, first.DuplicateOf)

	e.clk.Advance(59 * time.Second)
	status, dup := e.create(uniqueTask("report:2026-01", nil))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, first.ID, dup.ID)
	require.Equal(t, first.ID, *dup.DuplicateOf)
	require.Equal(t, 1, e.countNodes(e.token("acme", "head", "dispatcher")), "the duplicate made nothing")

	other, err := e.as(e.token("other", "head", "dispatcher")).CreateNodeWithResponse(context.Background(), nil, uniqueTask("report:2026-01", nil))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, other.StatusCode(), "another tenant's key is its own")

	e.clk.Advance(time.Second)
	status, fresh := e.create(uniqueTask("report:2026-01", nil))
	require.Equal(t, http.StatusCreated, status, "the window of the first create has passed")
	require.NotEqual(t, first.ID, fresh.ID)

	// In a batch, a later item with the key answers the earlier one's node.
	res, err := e.dispatcher().CreateNodesBatchWithResponse(context.Background(), nil, client.NodeBatchCreate{Items: []client.NodeCreate{
		uniqueTask("batch-key", nil), uniqueTask("batch-key", nil), uniqueTask("report:2026-01", nil),
	}})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	items := res.JSON201.Items
	require.Nil(t, items[0].DuplicateOf)
	require.Equal(t, items[0].ID, *items[1].DuplicateOf)
	require.Equal(t, fresh.ID, *items[2].DuplicateOf)
}

// A node holds its key only in the statuses of while: once it leaves them
// (claimed, with while [queued]; done, by default) a create makes a new one.
func TestUniqueHoldsOnlyWhileInItsStatuses(t *testing.T) {
	t.Parallel()
	e := start(t)
	w := e.user("w1")
	queuedOnly := func(u *client.UniqueRule) { u.While = &[]client.NodeStatus{client.NodeStatusQueued} }
	_, first := e.create(uniqueTask("sync:acme", queuedOnly))
	e.mustClaim(w, first.ID, 0)
	status, second := e.create(uniqueTask("sync:acme", queuedOnly))
	require.Equal(t, http.StatusCreated, status, "the first node runs: while [queued] no longer holds")
	require.NotEqual(t, first.ID, second.ID)
	status, dup := e.create(uniqueTask("sync:acme", nil))
	require.Equal(t, http.StatusOK, status, "the second node, queued, holds the key")
	require.Equal(t, second.ID, dup.ID)

	_, byDefault := e.create(uniqueTask("build:1", nil))
	e.mustClaim(w, byDefault.ID, 0)
	status, _ = e.create(uniqueTask("build:1", nil))
	require.Equal(t, http.StatusOK, status, "running holds the key by default")
	e.mustComplete(w, byDefault.ID, nil)
	status, after := e.create(uniqueTask("build:1", nil))
	require.Equal(t, http.StatusCreated, status, "done does not")
	require.NotEqual(t, byDefault.ID, after.ID)
}

// 32 concurrent creates with one key make exactly one node.
func TestConcurrentDuplicatesMakeOneNode(t *testing.T) {
	t.Parallel()
	e := start(t)
	c := e.dispatcher()
	var wg sync.WaitGroup
	statuses := make([]int, 32)
	ids := make([]string, 32)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.CreateNodeWithResponse(context.Background(), nil, uniqueTask("once", nil))
			if err != nil {
				t.Error(err)
				return
			}
			statuses[i] = res.StatusCode()
			switch {
			case res.JSON201 != nil:
				ids[i] = res.JSON201.ID
			case res.JSON200 != nil:
				ids[i] = res.JSON200.ID
			}
		}()
	}
	wg.Wait()
	made := 0
	for i, s := range statuses {
		require.Contains(t, []int{http.StatusOK, http.StatusCreated}, s)
		if s == http.StatusCreated {
			made++
		}
		require.Equal(t, ids[0], ids[i], "every answer names the one node")
	}
	require.Equal(t, 1, made)
	require.Equal(t, 1, e.countNodes(e.token("acme", "head", "dispatcher")))
}

// An Idempotency-Key is looked up first: a replay of a create answered as a
// duplicate answers it as a duplicate again.
func TestIdempotencyKeyReplaysADuplicate(t *testing.T) {
	t.Parallel()
	e := start(t)
	_, first := e.create(uniqueTask("k", nil))
	params := &client.CreateNodeParams{IdempotencyKey: ptr("retry-1")}
	for range 2 {
		res, err := e.dispatcher().CreateNodeWithResponse(context.Background(), params, uniqueTask("k", nil))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Equal(t, first.ID, *res.JSON200.DuplicateOf)
	}
}

// A debounced create replaces the waiting node's body and props and pushes
// its run_at; once the node is claimed, a create makes a new one.
func TestDebounceReplacesTheWaitingNode(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	w := e.user("w1")
	body := func(text string, v int) client.NodeCreate {
		n := uniqueTask("index:docs", nil)
		n.DebounceMS = ptr(int64(1000))
		n.Body = ptr(text)
		n.Props = &map[string]any{"v": v}
		return n
	}
	status, first := e.create(body("first", 1))
	require.Equal(t, http.StatusCreated, status)
	require.True(t, first.RunAt.Equal(e.clk.Now().Add(time.Second)))

	e.clk.Advance(600 * time.Millisecond)
	status, second := e.create(body("second", 2))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, first.ID, *second.DuplicateOf)
	require.Equal(t, "second", second.Body)
	require.EqualValues(t, 2, second.Props["v"])
	require.True(t, second.RunAt.Equal(e.clk.Now().Add(time.Second)), "run_at pushed to now + debounce_ms")

	e.clk.Advance(600 * time.Millisecond)
	next, err := w.ClaimNextWithResponse(ctx, "q", client.ClaimNextRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, next.StatusCode(), "the pushed run_at has not come")
	e.clk.Advance(400 * time.Millisecond)
	next, err = w.ClaimNextWithResponse(ctx, "q", client.ClaimNextRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, next.StatusCode(), string(next.Body))
	require.Equal(t, "second", next.JSON200.Node.Body)

	status, third := e.create(body("third", 3))
	require.Equal(t, http.StatusCreated, status, "the node was claimed: a new one")
	require.NotEqual(t, first.ID, third.ID)
	require.Equal(t, "second", e.getNode(first.ID).Body, "the claimed node is left alone")
}

func (e *env) getNode(id string) client.Node {
	e.t.Helper()
	res, err := e.dispatcher().GetNodeWithResponse(context.Background(), id)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return *res.JSON200
}

// A node not claimed by its start_by ends expired, evented, never handed
// out, and counted in its queue.
func TestStartByEndsAnUnclaimedNodeExpired(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	n := task("late")
	n.QueueTTLMS = ptr(int64(5000))
	status, made := e.create(n)
	require.Equal(t, http.StatusCreated, status)
	require.True(t, made.StartBy.Equal(e.clk.Now().Add(5*time.Second)))

	e.srv.Lapses.TestSignals.Lapsed.Init(t)
	e.clk.Advance(5 * time.Second)
	for e.srv.Lapses.Lapsed() < 1 {
		e.srv.Lapses.TestSignals.Lapsed.Wait(t)
	}
	got := e.getNode("late")
	require.Equal(t, client.NodeStatusExpired, got.Status)
	evs, err := e.dispatcher().ListNodeEventsWithResponse(ctx, "late", nil)
	require.NoError(t, err)
	last := evs.JSON200.Items[len(evs.JSON200.Items)-1]
	require.Equal(t, client.EventType("node_expired"), last.Type)
	next, err := e.user("w1").ClaimNextWithResponse(ctx, "default", client.ClaimNextRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, next.StatusCode())
	queues, err := e.dispatcher().ListQueuesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, queues.JSON200.Items[0].Counts["expired"])
	list, err := e.dispatcher().ListNodesWithResponse(ctx, &client.ListNodesParams{Status: ptr(client.NodeStatusExpired)})
	require.NoError(t, err)
	require.Len(t, list.JSON200.Items, 1)
}

// A node whose start_by passed while the server was down is expired when
// the server comes back, before it serves.
func TestStartByPassedWhileStoppedIsExpiredAtRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC))
	e, stop := startOn(t, dir, clk)
	n := task("late")
	n.StartBy = ptr(clk.Now().Add(time.Minute))
	e.create(n)
	e.create(task("fine"))
	stop()

	clk.Advance(2 * time.Minute)
	e2, _ := startOn(t, dir, clk)
	require.Equal(t, client.NodeStatusExpired, e2.getNode("late").Status)
	next, err := e2.user("w1").ClaimNextWithResponse(context.Background(), "default", client.ClaimNextRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, next.StatusCode())
	require.Equal(t, "fine", next.JSON200.Node.ID)
}

// Bad create rules are a 400 naming the field, and store nothing.
func TestCreateRulesRefuseBadInput(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	res, err := e.admin().PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{RetentionMS: client.Value(int64(3600000))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	future := e.clk.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	past := e.clk.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	tok := e.token("acme", "head", "dispatcher")
	cases := []struct{ body, field string }{
		{`{"type":"t","unique":{"key":""}}`, "unique.key"},
		{`{"type":"t","unique":{"key":"a\u0007b"}}`, "unique.key"},
		{fmt.Sprintf(`{"type":"t","unique":{"key":%q}}`, strings.Repeat("k", 257)), "unique.key"},
		{`{"type":"t","unique":{"key":"k","window_ms":0}}`, "unique.window_ms"},
		{`{"type":"t","unique":{"key":"k","window_ms":3600001}}`, "unique.window_ms"},
		{`{"type":"t","unique":{"key":"k","while":[]}}`, "unique.while"},
		{`{"type":"t","unique":{"key":"k","while":["queued","queued"]}}`, "unique.while[1]"},
		{`{"type":"t","unique":{"key":"k","while":["later"]}}`, "unique.while[0]"},
		{`{"type":"t","debounce_ms":1000}`, "debounce_ms"},
		{`{"type":"t","debounce_ms":0,"unique":{"key":"k"}}`, "debounce_ms"},
		{`{"type":"t","debounce_ms":1000,"delay_ms":5,"unique":{"key":"k"}}`, "debounce_ms"},
		{`{"type":"t","debounce_ms":1000,"unique":{"key":"k","window_ms":5000}}`, "unique.window_ms"},
		{`{"type":"t","start_by":"` + past + `"}`, "start_by"},
		{`{"type":"t","start_by":"` + future + `","queue_ttl_ms":1000}`, "queue_ttl_ms"},
		{`{"type":"t","queue_ttl_ms":0}`, "queue_ttl_ms"},
		{`{"type":"t","queue_ttl_ms":1000,"delay_ms":2000}`, "queue_ttl_ms"},
		{`{"type":"t","start_by":"` + future + `","run_at":"` + future + `"}`, "start_by"},
	}
	for _, tc := range cases {
		resp, b := e.raw(http.MethodPost, "/v1/nodes", tok, "application/json", tc.body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", tc.body, b)
		var p problemBody
		require.NoError(t, json.Unmarshal(b, &p))
		require.Equal(t, tc.field, p.Field, "%s: %s", tc.body, b)
	}
	resp, b := e.raw(http.MethodPost, "/v1/nodes/batch", tok, "application/json", `{"items":[{"type":"t"},{"type":"t","unique":{"key":""}}]}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	var p problemBody
	require.NoError(t, json.Unmarshal(b, &p))
	require.Equal(t, "items[1].unique.key", p.Field)
	require.Equal(t, 0, e.countNodes(tok), "nothing was stored")
}
