package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

func bop(op client.BatchOpOp, id string, fields map[string]any) client.BatchOp {
	return client.BatchOp{Op: op, ID: id, AdditionalProperties: fields}
}

// mustBatch runs ops for c and expects 200 with one result per op, in order.
func (e *env) mustBatch(c *client.ClientWithResponses, ops ...client.BatchOp) []client.BatchResult {
	e.t.Helper()
	res, err := c.RunBatchWithResponse(context.Background(), client.BatchRequest{Ops: ops})
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Len(e.t, res.JSON200.Results, len(ops))
	for i, r := range res.JSON200.Results {
		require.Equal(e.t, ops[i].ID, r.ID, "results[%d] is in order", i)
	}
	return res.JSON200.Results
}

// decodeBody decodes a batch result body strictly into v: the body must have
// exactly the shape of the endpoint's answer.
func decodeBody(t *testing.T, body map[string]any, v any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), string(b))
}

// keysOf is the sorted member names of a JSON object (and of its "node").
func keysOf(t *testing.T, raw []byte) []string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	keys := slices.Sorted(maps.Keys(m))
	if n, ok := m["node"].(map[string]any); ok {
		for k := range n {
			keys = append(keys, "node."+k)
		}
	}
	if l, ok := m["lease"].(map[string]any); ok {
		for k := range l {
			keys = append(keys, "lease."+k)
		}
	}
	slices.Sort(keys)
	return keys
}

func TestBatchMixedOpsAnswerAsTheirEndpoints(t *testing.T) {
	t.Parallel()
	e := start(t)
	w, bob := e.user("w"), e.user("bob")
	e.mustCreate(task("epic"))
	ids := []string{"a", "b", "c", "d", "e", "f", "h"}
	for _, prefix := range []string{"", "s"} { // s*: twins for the single endpoints
		for _, id := range ids {
			e.mustCreate(child(prefix+id, "epic"))
			e.mustClaim(w, prefix+id, 60000)
		}
		e.mustCreate(task(prefix + "g"))
		e.mustClaim(bob, prefix+"g", 60000)
	}
	e.clk.Advance(10 * time.Second)
	bExpires := e.node("b").Lease.Expires

	results := e.mustBatch(w,
		bop(client.BatchOpOpRenew, "a", nil),
		bop(client.BatchOpOpExtend, "b", map[string]any{"ms": 30000}),
		bop(client.BatchOpOpProgress, "c", map[string]any{"pct": 50, "message": "half", "usage": map[string]any{"tokens": 4}}),
		bop(client.BatchOpOpComplete, "d", map[string]any{"result": map[string]any{"pr": 7}, "usage": map[string]any{"tokens": 3}}),
		bop(client.BatchOpOpFail, "e", map[string]any{"error": "boom"}),
		bop(client.BatchOpOpRelease, "f", map[string]any{"reason": "not mine"}),
		bop(client.BatchOpOpRenew, "g", nil),
	)
	// One failing op per batch: several failing at once trip the race of
	// TestBatchManyFailingOpsOnDifferentNodes.
	results = append(results, e.mustBatch(w,
		bop(client.BatchOpOpExtend, "h", map[string]any{"ms": 0}),
		bop(client.BatchOpOpRenew, "a", nil),
	)...)
	statuses := make([]int, len(results))
	for i, r := range results {
		statuses[i] = r.Status
	}
	require.Equal(t, []int{200, 200, 200, 200, 200, 200, 409, 400, 200}, statuses)

	var renew client.RenewResponse
	decodeBody(t, results[0].Body, &renew)
	require.True(t, renew.Ok)
	require.Equal(t, client.NodeStatusRunning, renew.Status)
	require.Equal(t, e.clk.Now().Add(time.Minute).UnixMilli(), renew.Lease.Expires)
	require.Equal(t, "a", renew.Lease.NodeID)

	var extend client.ExtendResponse
	decodeBody(t, results[1].Body, &extend)
	require.Equal(t, bExpires+30000, extend.Lease.Expires)

	var progress client.ProgressResponse
	decodeBody(t, results[2].Body, &progress)
	require.Equal(t, client.NodeStatusRunning, progress.Status)
	require.EqualValues(t, 50, *progress.Node.Progress.Pct)
	require.Equal(t, "half", *progress.Node.Progress.Message)
	require.Equal(t, e.clk.Now().Add(time.Minute).UnixMilli(), progress.Lease.Expires)

	var complete client.CompleteResponse
	decodeBody(t, results[3].Body, &complete)
	require.Equal(t, client.NodeStatusDone, complete.Status)
	require.Equal(t, client.NodeStatusDone, complete.Node.Status)
	require.Equal(t, map[string]any{"pr": float64(7)}, complete.Node.Result)
	require.Nil(t, complete.Node.Lease)

	var fail client.NodeAnswer
	decodeBody(t, results[4].Body, &fail)
	require.Equal(t, client.NodeStatusQueued, fail.Node.Status)
	require.Equal(t, "boom", *fail.Node.Error)
	require.EqualValues(t, 1, fail.Node.Attempts)

	var release client.ReleaseResponse
	decodeBody(t, results[5].Body, &release)
	require.True(t, release.Ok)
	require.Equal(t, client.NodeStatusQueued, release.Status)

	var lost client.Problem
	decodeBody(t, results[6].Body, &lost)
	requireProblem(t, &lost, http.StatusConflict, client.ProblemCodeLeaseLost)
	require.Equal(t, "bob", *lost.Holder)
	var bad client.Problem
	decodeBody(t, results[7].Body, &bad)
	requireProblem(t, &bad, http.StatusBadRequest, client.ProblemCodeBadRequest)
	require.Equal(t, "ms", bad.Field)

	// The effects are those of the endpoints.
	require.Equal(t, client.NodeStatusDone, e.node("d").Status)
	require.Equal(t, []any{"done"}, e.assignedOutcomes("d"))
	require.Equal(t, []any{"failed"}, e.assignedOutcomes("e"))
	require.Equal(t, []any{"released"}, e.assignedOutcomes("f"))
	require.Nil(t, e.node("f").Lease)
	require.EqualValues(t, 0, e.node("f").Attempts, "the release gave its attempt back")
	require.Equal(t, "bob", e.node("g").Lease.By, "a refused op changes nothing")
	require.Equal(t, e.node("sh").Lease.Expires, e.node("h").Lease.Expires, "a rejected extend changes nothing")
	require.EqualValues(t, 7, e.node("epic").UsageTotal["tokens"], "usage rolls up from batched ops")

	// The same calls on the single endpoints answer with the same status and shape.
	tok := e.token("acme", "w")
	single := []struct{ path, body string }{
		{"/v1/nodes/sa/renew", `{}`},
		{"/v1/nodes/sb/extend", `{"ms":30000}`},
		{"/v1/nodes/sc/progress", `{"pct":50,"message":"half","usage":{"tokens":4}}`},
		{"/v1/nodes/sd/complete", `{"result":{"pr":7},"usage":{"tokens":3}}`},
		{"/v1/nodes/se/fail", `{"error":"boom"}`},
		{"/v1/nodes/sf/release", `{"reason":"not mine"}`},
		{"/v1/nodes/sg/renew", `{}`},
		{"/v1/nodes/sh/extend", `{"ms":0}`},
	}
	for i, s := range single {
		resp, body := e.raw(http.MethodPost, s.path, tok, "application/json", s.body)
		require.Equal(t, resp.StatusCode, results[i].Status, "%s: %s", s.path, body)
		batched, err := json.Marshal(results[i].Body)
		require.NoError(t, err)
		require.Equal(t, keysOf(t, body), keysOf(t, batched), "%s: the batched body has the endpoint's shape", s.path)
		if resp.StatusCode >= 400 {
			var p client.Problem
			require.NoError(t, json.Unmarshal(body, &p))
			require.Equal(t, p.Code, client.ProblemCode(results[i].Body["code"].(string)), s.path)
		}
	}
}

func TestBatchSameNodeOpsRunInOrder(t *testing.T) {
	t.Parallel()
	e := start(t)
	w := e.user("w")
	for _, id := range []string{"x", "y", "z"} {
		e.mustCreate(task(id))
		e.mustClaim(w, id, 0)
	}
	results := e.mustBatch(w,
		bop(client.BatchOpOpRenew, "x", nil),
		bop(client.BatchOpOpComplete, "y", nil),
		bop(client.BatchOpOpComplete, "x", map[string]any{"result": 7}),
		bop(client.BatchOpOpRenew, "y", nil),
		bop(client.BatchOpOpProgress, "z", map[string]any{"pct": 10}),
		bop(client.BatchOpOpProgress, "z", map[string]any{"pct": 20}),
		bop(client.BatchOpOpProgress, "z", map[string]any{"pct": 30}),
	)
	got := make([]int, len(results))
	for i, r := range results {
		got[i] = r.Status
	}
	require.Equal(t, []int{200, 200, 200, 409, 200, 200, 200}, got, "renew then complete: 200, 200; complete then renew: 200, 409")
	require.Equal(t, "lease_lost", results[3].Body["code"])
	require.Equal(t, client.NodeStatusDone, e.node("x").Status)
	require.EqualValues(t, 7, e.node("x").Result)
	require.EqualValues(t, 30, *e.node("z").Progress.Pct, "the last of a node's ops is applied last")
	var pcts []any
	for _, ev := range e.nodeEvents("z") {
		if ev.Type == client.EventTypeProgress {
			pcts = append(pcts, ev.Data["pct"])
		}
	}
	require.Equal(t, []any{float64(10), float64(20), float64(30)}, pcts)

	// Two completions of one run in one batch: the retry answers 200 and changes nothing.
	e.mustCreate(task("twice"))
	e.mustClaim(w, "twice", 0)
	res := e.mustBatch(w,
		bop(client.BatchOpOpComplete, "twice", map[string]any{"fence": 1}),
		bop(client.BatchOpOpComplete, "twice", map[string]any{"fence": 1}),
	)
	require.Equal(t, 200, res[0].Status)
	require.Equal(t, 200, res[1].Status)
	require.Equal(t, res[0].Body["node"].(map[string]any)["version"], res[1].Body["node"].(map[string]any)["version"])
}

// Many ops that fail on different nodes of one batch each get their own
// problem result; they run concurrently, so this is also a -race check.
func TestBatchManyFailingOpsOnDifferentNodes(t *testing.T) {
	t.Parallel()
	e := start(t)
	w := e.user("w")
	var ops []client.BatchOp
	var want []int
	for i := range 20 {
		x, y := fmt.Sprintf("x%d", i), fmt.Sprintf("y%d", i)
		e.mustCreate(task(x))
		e.mustCreate(task(y))
		e.mustClaim(w, x, 0)
		e.mustClaim(w, y, 0)
		ops = append(ops,
			bop(client.BatchOpOpRenew, x, nil),
			bop(client.BatchOpOpComplete, y, nil),
			bop(client.BatchOpOpComplete, x, map[string]any{"result": i}),
			bop(client.BatchOpOpRenew, y, nil),
			bop(client.BatchOpOpExtend, x, map[string]any{"ms": 0}),
		)
		want = append(want, 200, 200, 200, 409, 400)
	}
	results := e.mustBatch(w, ops...)
	got := make([]int, len(results))
	for i, r := range results {
		got[i] = r.Status
	}
	require.Equal(t, want, got)
	for i := 0; i < len(results); i += 5 {
		require.Equal(t, "lease_lost", results[i+3].Body["code"])
		require.Equal(t, "bad_request", results[i+4].Body["code"])
	}
}

func TestBatchRejectsMalformedRequestsAsAWhole(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.mustCreate(task("held"))
	w := e.user("w")
	e.mustClaim(w, "held", 0)
	tok := e.token("acme", "w")
	valid := `{"op":"complete","id":"held"}`
	thousandOne := `{"ops":[` + strings.TrimSuffix(strings.Repeat(`{"op":"renew","id":"held"},`, 1001), ",") + `]}`
	for name, body := range map[string]string{
		"unknown op":        `{"ops":[` + valid + `,{"op":"explode","id":"held"}]}`,
		"missing id":        `{"ops":[` + valid + `,{"op":"renew"}]}`,
		"missing op":        `{"ops":[` + valid + `,{"id":"held"}]}`,
		"id not a string":   `{"ops":[` + valid + `,{"op":"renew","id":7}]}`,
		"bad id":            `{"ops":[` + valid + `,{"op":"renew","id":"-held"}]}`,
		"op not an object":  `{"ops":[` + valid + `,1]}`,
		"claim is not here": `{"ops":[` + valid + `,{"op":"claim","id":"held"}]}`,
		"zero ops":          `{"ops":[]}`,
		"no ops":            `{}`,
		"null ops":          `{"ops":null}`,
		"unknown member":    `{"ops":[` + valid + `],"atomic":true}`,
		"1001 ops":          thousandOne,
		"no body":           ``,
		"malformed":         `{"ops":[`,
	} {
		resp, b := e.raw(http.MethodPost, "/v1/batch", tok, "application/json", body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", name, b)
		require.Contains(t, string(b), `"code":"bad_request"`, name)
	}
	require.Equal(t, client.NodeStatusRunning, e.node("held").Status, "a rejected batch runs none of its ops")

	thousand := `{"ops":[` + strings.TrimSuffix(strings.Repeat(`{"op":"renew","id":"held"},`, 1000), ",") + `]}`
	resp, b := e.raw(http.MethodPost, "/v1/batch", tok, "application/json", thousand)
	require.Equal(t, http.StatusOK, resp.StatusCode, "1000 ops is the limit, not past it: %.300s", b)

	reader, err := e.user("viewer", "reader").RunBatchWithResponse(context.Background(), client.BatchRequest{Ops: []client.BatchOp{bop(client.BatchOpOpRenew, "held", nil)}})
	require.NoError(t, err)
	requireProblem(t, reader.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	missing := e.mustBatch(w, bop(client.BatchOpOpRenew, "nope", nil))
	require.Equal(t, http.StatusNotFound, missing[0].Status)
	require.Equal(t, "not_found", missing[0].Body["code"])
}

func TestBatchRenewsFiveHundredLeases(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	const n = 500
	items := make([]client.NodeCreate, n)
	for i := range items {
		items[i] = client.NodeCreate{ID: ptr(fmt.Sprintf("bulk-%03d", i)), Type: "task", Queue: ptr("bulk")}
	}
	created, err := e.dispatcher().CreateNodesBatchWithResponse(ctx, nil, client.NodeBatchCreate{Items: items})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, created.StatusCode(), "%.300s", created.Body)

	w := e.user("w")
	claimed, err := w.ClaimNextManyWithResponse(ctx, "bulk", client.ClaimManyRequest{Max: ptr(n), TTLMS: ptr(int64(60000))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claimed.StatusCode(), "%.300s", claimed.Body)
	require.Len(t, claimed.JSON200.Items, n)
	ops := make([]client.BatchOp, n)
	for i, it := range claimed.JSON200.Items {
		ops[i] = bop(client.BatchOpOpRenew, it.Node.ID, map[string]any{"fence": it.Lease.Fence})
	}

	e.clk.Advance(30 * time.Second)
	began := time.Now()
	results := e.mustBatch(w, ops...)
	t.Logf("batch renew of %d leases: %s", n, time.Since(began))
	want := e.clk.Now().Add(time.Minute).UnixMilli()
	for i, r := range results {
		require.Equal(t, http.StatusOK, r.Status, "%s: %v", r.ID, r.Body)
		var renew client.RenewResponse
		decodeBody(t, r.Body, &renew)
		require.Equal(t, want, renew.Lease.Expires, ops[i].ID)
	}
	leases, err := e.dispatcher().ListLeasesWithResponse(ctx, &client.ListLeasesParams{Holder: ptr("w"), Limit: ptr(1000)})
	require.NoError(t, err)
	require.Len(t, leases.JSON200.Items, n)
	for _, l := range leases.JSON200.Items {
		require.Equal(t, want, l.Expires, l.NodeID)
	}

	for i := range ops {
		ops[i] = bop(client.BatchOpOpComplete, ops[i].ID, map[string]any{"usage": map[string]any{"tokens": 1}})
	}
	began = time.Now()
	results = e.mustBatch(w, ops...)
	t.Logf("batch complete of %d leases: %s", n, time.Since(began))
	for _, r := range results {
		require.Equal(t, http.StatusOK, r.Status, "%s: %v", r.ID, r.Body)
	}
	leases, err = e.dispatcher().ListLeasesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, leases.JSON200.Items)
	done, err := e.dispatcher().ListNodesWithResponse(ctx, &client.ListNodesParams{Queue: ptr("bulk"), Status: ptr(client.NodeStatusDone), Limit: ptr(1000)})
	require.NoError(t, err)
	require.Len(t, done.JSON200.Items, n)
}
