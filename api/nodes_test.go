package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

func TestCreateAndGetNode(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	c := e.dispatcher()

	res, err := c.CreateNodeWithResponse(ctx, nil, client.NodeCreate{
		ID: ptr("task-api-rate-limits"), Type: "task", Title: ptr("Add API rate limits"),
		Queue: ptr("default"), Labels: &[]string{"api", "api"}, Priority: ptr(int64(3)),
		Props: &map[string]any{"repo": "tether"},
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	n := res.JSON201
	require.Equal(t, client.NodeStatusQueued, n.Status)
	require.Equal(t, []string{"api"}, n.Labels, "labels are a set")
	require.EqualValues(t, 5, n.MaxAttempts, "the tenant default")
	require.EqualValues(t, 1, n.Version)
	require.True(t, n.Ready)
	require.Equal(t, "head", n.CreatedBy)

	got, err := c.GetNodeWithResponse(ctx, "task-api-rate-limits")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, got.StatusCode())
	require.Equal(t, `"1"`, got.HTTPResponse.Header.Get("ETag"))
	require.Equal(t, "Add API rate limits", got.JSON200.Title)

	open, err := c.CreateNodeWithResponse(ctx, nil, client.NodeCreate{Type: "note"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, open.StatusCode())
	require.Equal(t, client.NodeStatusOpen, open.JSON201.Status, "a node without a queue is open")
	id, err := uuid.Parse(open.JSON201.ID)
	require.NoError(t, err)
	require.EqualValues(t, 7, id.Version(), "generated ids are UUIDv7")

	dup, err := c.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("task-api-rate-limits"), Type: "task"})
	require.NoError(t, err)
	requireProblem(t, dup.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeAlreadyExists)

	missing, err := c.GetNodeWithResponse(ctx, "nope")
	require.NoError(t, err)
	requireProblem(t, missing.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
}

func TestCreateRejectsBadInputAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("acme", "head", "dispatcher")
	cases := map[string]struct {
		body  string
		field string
	}{
		"unknown field":     {`{"type":"task","typo":1}`, "typo"},
		"no type":           {`{"id":"x"}`, "type"},
		"bad id":            {`{"type":"task","id":"-bad"}`, "id"},
		"id too long":       {fmt.Sprintf(`{"type":"task","id":%q}`, strings.Repeat("a", 129)), "id"},
		"slash in id":       {`{"type":"task","id":"a/b"}`, "id"},
		"wrong type":        {`{"type":"task","priority":"high"}`, "priority"},
		"max_attempts 0":    {`{"type":"task","max_attempts":0}`, "max_attempts"},
		"negative delay":    {`{"type":"task","delay_ms":-1}`, "delay_ms"},
		"run_at and delay":  {`{"type":"task","delay_ms":5,"run_at":"2030-01-01T00:00:00Z"}`, "delay_ms"},
		"bad on_child_fail": {`{"type":"task","on_child_fail":"explode"}`, "on_child_fail"},
		"bad backoff":       {`{"type":"task","backoff":{"initial_ms":10,"max_ms":5,"factor":2}}`, "backoff.max_ms"},
		"malformed json":    {`{"type":`, ""},
		"not an object":     {`[1,2]`, ""},
		"two objects":       {`{"type":"a"}{"type":"b"}`, ""},
	}
	for name, tc := range cases {
		resp, body := e.raw(http.MethodPost, "/v1/nodes", tok, "application/json", tc.body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", name, body)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"), name)
		require.Contains(t, string(body), `"code":"bad_request"`, name)
		if tc.field != "" {
			require.Contains(t, string(body), fmt.Sprintf(`"field":%q`, tc.field), name)
		}
	}
	big := fmt.Sprintf(`{"type":"task","body":%q}`, strings.Repeat("x", 70<<10))
	resp, body := e.raw(http.MethodPost, "/v1/nodes", tok, "application/json", big)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"code":"payload_too_large"`)

	list, err := e.dispatcher().ListNodesWithResponse(context.Background(), nil)
	require.NoError(t, err)
	require.Empty(t, list.JSON200.Items, "no bad request created anything")
}

func TestBatchCreateIsAllOrNone(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	c := e.dispatcher()
	res, err := c.CreateNodesBatchWithResponse(ctx, nil, client.NodeBatchCreate{Items: []client.NodeCreate{
		task("b1"), task("b2"), {ID: ptr("b3"), Type: "task", Parent: ptr("b1")},
	}})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	require.Len(t, res.JSON201.Items, 3)
	require.Equal(t, "b1", *res.JSON201.Items[2].Parent)

	bad, err := c.CreateNodesBatchWithResponse(ctx, nil, client.NodeBatchCreate{Items: []client.NodeCreate{
		task("c1"), task("b1"), // b1 is taken: nothing of this batch may land
	}})
	require.NoError(t, err)
	requireProblem(t, bad.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeAlreadyExists)
	got, err := c.GetNodeWithResponse(ctx, "c1")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, got.StatusCode(), "c1 was rolled back with the batch")

	invalid, err := c.CreateNodesBatchWithResponse(ctx, nil, client.NodeBatchCreate{Items: []client.NodeCreate{
		task("d1"), {Type: "task", ID: ptr("bad id")},
	}})
	require.NoError(t, err)
	requireProblem(t, invalid.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	require.Equal(t, "items[1].id", invalid.ApplicationProblemJSON400.Field)
}

func TestListNodesOrderFiltersAndCursor(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	c := e.dispatcher()
	var items []client.NodeCreate
	for i := 0; i < 12; i++ {
		n := client.NodeCreate{ID: ptr(fmt.Sprintf("n%02d", i)), Type: "task", Queue: ptr("q"), Priority: ptr(int64(i % 3))}
		if i%4 == 0 {
			n.Labels = &[]string{"hot"}
			n.Type = "bug"
		}
		items = append(items, n)
	}
	res, err := c.CreateNodesBatchWithResponse(ctx, nil, client.NodeBatchCreate{Items: items})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))

	var ids []string
	var cursor *string
	for {
		page, err := c.ListNodesWithResponse(ctx, &client.ListNodesParams{Limit: ptr(5), Cursor: cursor})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, page.StatusCode(), string(page.Body))
		for _, n := range page.JSON200.Items {
			ids = append(ids, n.ID)
		}
		if page.JSON200.NextCursor == nil {
			break
		}
		cursor = page.JSON200.NextCursor
	}
	// Priority high first; within a priority, creation order (all in one
	// batch, so equal instants), then id.
	want := []string{"n02", "n05", "n08", "n11", "n01", "n04", "n07", "n10", "n00", "n03", "n06", "n09"}
	require.Equal(t, want, ids)

	hot, err := c.ListNodesWithResponse(ctx, &client.ListNodesParams{Label: ptr("hot"), Type: ptr("bug"), Status: ptr(client.NodeStatusQueued)})
	require.NoError(t, err)
	require.Len(t, hot.JSON200.Items, 3)

	ready, err := c.ListNodesWithResponse(ctx, &client.ListNodesParams{Ready: ptr(true), Queue: ptr("q")})
	require.NoError(t, err)
	require.Len(t, ready.JSON200.Items, 12)

	bad, err := c.ListNodesWithResponse(ctx, &client.ListNodesParams{Limit: ptr(5000)})
	require.NoError(t, err)
	requireProblem(t, bad.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	resp, body := e.raw(http.MethodGet, "/v1/nodes?cursor=zzzz", e.token("acme", "head", "dispatcher"), "", "")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
}

func TestPatchNodeMergeIfMatchAndHolderLimits(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	c := e.dispatcher()
	e.mustCreate(client.NodeCreate{ID: ptr("p1"), Type: "task", Queue: ptr("q"), Props: &map[string]any{"a": 1, "nested": map[string]any{"x": 1, "y": 2}}})

	res, err := c.UpdateNodeWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, "p1", &client.UpdateNodeParams{IfMatch: ptr(`"1"`)},
		client.NodePatch{Title: client.Value("new title"), Props: client.Value(map[string]any{"a": nil, "b": 2, "nested": map[string]any{"y": nil}})})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Equal(t, "new title", res.JSON200.Title)
	require.Equal(t, map[string]any{"b": float64(2), "nested": map[string]any{"x": float64(1)}}, res.JSON200.Props, "props take an RFC 7396 merge")
	require.EqualValues(t, 2, res.JSON200.Version)
	require.Equal(t, `"2"`, res.HTTPResponse.Header.Get("ETag"))

	stale, err := c.UpdateNodeWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, "p1", &client.UpdateNodeParams{IfMatch: ptr(`"1"`)},
		client.NodePatch{Title: client.Value("lost update")})
	require.NoError(t, err)
	requireProblem(t, stale.ApplicationProblemJSON412, http.StatusPreconditionFailed, client.ProblemCodePreconditionFailed)

	open, err := c.UpdateNodeWithResponse(ctx, "p1", nil, client.NodePatch{Queue: client.Null[string]()})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, open.StatusCode(), string(open.Body))
	require.Equal(t, client.NodeStatusOpen, open.JSON200.Status, "no queue: at rest as open")
	require.Nil(t, open.JSON200.Queue)

	// A worker may patch only the node it holds, and only title, body, props, labels.
	w := e.user("alice")
	denied, err := w.UpdateNodeWithResponse(ctx, "p1", nil, client.NodePatch{Title: client.Value("mine")})
	require.NoError(t, err)
	requireProblem(t, denied.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	claim, err := w.ClaimNodeWithResponse(ctx, "p1", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))
	ok, err := w.UpdateNodeWithResponse(ctx, "p1", nil, client.NodePatch{Body: client.Value("progress notes")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ok.StatusCode(), string(ok.Body))
	prio, err := w.UpdateNodeWithResponse(ctx, "p1", nil, client.NodePatch{Priority: client.Value(int64(9))})
	require.NoError(t, err)
	requireProblem(t, prio.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)

	tok := e.token("acme", "head", "dispatcher")
	resp, body := e.raw(http.MethodPatch, "/v1/nodes/p1", tok, "application/merge-patch+json", `{"status":"done"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
	resp, body = e.raw(http.MethodPatch, "/v1/nodes/p1", tok, "application/merge-patch+json", `{"max_attempts":0}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
}

func TestDeleteNodeRetiresEdgesAndNeedsForceWhileRunning(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	c := e.dispatcher()
	e.mustCreate(task("parent"))
	e.mustCreate(client.NodeCreate{ID: ptr("child"), Type: "task", Parent: ptr("parent")})
	claim, err := e.user("alice").ClaimNodeWithResponse(ctx, "child", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))

	busy, err := c.DeleteNodeWithResponse(ctx, "child", nil)
	require.NoError(t, err)
	requireProblem(t, busy.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeConflict)
	require.Equal(t, "alice", *busy.ApplicationProblemJSON409.Holder)

	gone, err := c.DeleteNodeWithResponse(ctx, "child", &client.DeleteNodeParams{Force: ptr(true)})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, gone.StatusCode(), string(gone.Body))
	get, err := c.GetNodeWithResponse(ctx, "child")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, get.StatusCode())

	hist, err := c.ListNodeEdgesWithResponse(ctx, "identity:alice", &client.ListNodeEdgesParams{Dir: ptr(client.EdgeDirectionIn), IncludeRetired: ptr(true)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, hist.StatusCode(), string(hist.Body))
	require.Len(t, hist.JSON200.Items, 1)
	require.Equal(t, "cancelled", hist.JSON200.Items[0].Props["outcome"])
	require.NotNil(t, hist.JSON200.Items[0].RetiredAt, "edges are retired, not erased")

	parentEdges, err := c.ListNodeEdgesWithResponse(ctx, "parent", &client.ListNodeEdgesParams{IncludeRetired: ptr(true)})
	require.NoError(t, err)
	require.Len(t, parentEdges.JSON200.Items, 1)
	require.NotNil(t, parentEdges.JSON200.Items[0].RetiredAt)
	p, err := c.GetNodeWithResponse(ctx, "parent")
	require.NoError(t, err)
	require.True(t, p.JSON200.Ready, "a parent whose only child is gone is ready again")
}
