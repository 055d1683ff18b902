package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// deadNodes makes n nodes of queue q that ended dead (one attempt, failed).
func (e *env) deadNodes(q string, n int) []string {
	e.t.Helper()
	w := e.user("w1", "worker")
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-dead-%02d", q, i)
		e.mustCreate(client.NodeCreate{ID: ptr(ids[i]), Type: "task", Queue: ptr(q), MaxAttempts: ptr(int64(1)), Title: ptr(fmt.Sprintf("Import batch %d", i))})
		e.mustClaim(w, ids[i], 0)
		ans := e.mustFail(w, ids[i], client.FailRequest{Error: fmt.Sprintf("attempt failed: row %d", i)})
		require.Equal(e.t, client.NodeStatusDead, ans.Node.Status)
	}
	return ids
}

func TestBulkRequeueOfDeadNodes(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	dead := e.deadNodes("imports", 50)
	for i := range 5 {
		e.mustCreate(client.NodeCreate{ID: ptr(fmt.Sprintf("imports-fresh-%d", i)), Type: "task", Queue: ptr("imports")})
	}
	d := e.dispatcher()
	filter := client.NodeFilter{Queue: ptr("imports"), Status: ptr(client.NodeStatusDead)}

	// A dry run counts and changes nothing.
	res, err := d.BulkNodesWithResponse(ctx, client.BulkRequest{Action: client.BulkRequestActionRequeue, Filter: &filter, DryRun: ptr(true)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Equal(t, 50, res.JSON200.Matched)
	require.False(t, res.JSON200.Truncated)
	require.Empty(t, res.JSON200.Affected)
	require.Equal(t, client.NodeStatusDead, e.node(dead[0]).Status)

	// A limit below the match count says so and touches only the first.
	res, err = d.BulkNodesWithResponse(ctx, client.BulkRequest{Action: client.BulkRequestActionRequeue, Filter: &filter, Limit: ptr(10), DryRun: ptr(true)})
	require.NoError(t, err)
	require.Equal(t, 10, res.JSON200.Matched)
	require.True(t, res.JSON200.Truncated)

	res, err = d.BulkNodesWithResponse(ctx, client.BulkRequest{Action: client.BulkRequestActionRequeue, Filter: &filter, Reason: ptr("fixed the importer")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Equal(t, 50, res.JSON200.Matched)
	require.ElementsMatch(t, dead, res.JSON200.Affected)
	require.Empty(t, res.JSON200.Failed)
	for _, id := range dead {
		n := e.node(id)
		require.Equal(t, client.NodeStatusQueued, n.Status, id)
		require.Zero(t, n.Attempts, id)
	}
	list, err := d.ListNodesWithResponse(ctx, &client.ListNodesParams{Queue: ptr("imports"), Status: ptr(client.NodeStatusQueued), Limit: ptr(1000)})
	require.NoError(t, err)
	require.Len(t, list.JSON200.Items, 55)

	// A node the action does not fit is reported with its own problem; the
	// rest go on.
	res, err = d.BulkNodesWithResponse(ctx, client.BulkRequest{Action: client.BulkRequestActionRequeue, Filter: &client.NodeFilter{Q: ptr("imports-fresh-")}})
	require.NoError(t, err)
	require.Equal(t, 5, res.JSON200.Matched)
	require.Len(t, res.JSON200.Failed, 5)
	require.Equal(t, http.StatusConflict, res.JSON200.Failed[0].Status)
	require.Equal(t, "conflict", res.JSON200.Failed[0].Code)
	require.Contains(t, res.JSON200.Failed[0].Detail, "only a failed, dead, cancelled or expired node can be requeued")
}

func TestBulkCancelAndDelete(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	for i := range 4 {
		e.mustCreate(client.NodeCreate{ID: ptr(fmt.Sprintf("c-%d", i)), Type: "task", Queue: ptr("reports"), Labels: &[]string{"nightly"}})
	}
	e.mustCreate(client.NodeCreate{ID: ptr("keep"), Type: "task", Queue: ptr("reports")})
	e.mustClaim(e.user("w1", "worker"), "c-0", 0)

	res, err := d.BulkNodesWithResponse(ctx, client.BulkRequest{Action: client.BulkRequestActionCancel, Filter: &client.NodeFilter{Label: ptr("nightly")}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.ElementsMatch(t, []string{"c-0", "c-1", "c-2", "c-3"}, res.JSON200.Affected)
	require.Equal(t, client.NodeStatusCancelled, e.node("c-0").Status)
	require.Equal(t, client.NodeStatusQueued, e.node("keep").Status)

	res, err = d.BulkNodesWithResponse(ctx, client.BulkRequest{Action: client.BulkRequestActionDelete, Filter: &client.NodeFilter{Status: ptr(client.NodeStatusCancelled)}})
	require.NoError(t, err)
	require.Len(t, res.JSON200.Affected, 4)
	got, err := d.GetNodeWithResponse(ctx, "c-1")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, got.StatusCode())
}

func TestBulkRefusals(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(task("a"))

	res, err := e.user("w1", "worker").BulkNodesWithResponse(ctx, client.BulkRequest{Action: client.BulkRequestActionCancel})
	require.NoError(t, err)
	requireProblem(t, res.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)

	for body, field := range map[string]string{
		`{"action":"explode"}`:                             "action",
		`{"action":"cancel","filter":{"status":"asleep"}}`: "status",
		`{"action":"cancel","limit":0}`:                    "limit",
		`{"action":"cancel","limit":10001}`:                "limit",
		`{"action":"cancel","filter":{"colour":"red"}}`:    "colour",
	} {
		resp, b := e.raw(http.MethodPost, "/v1/nodes/bulk", e.token("acme", "head", "dispatcher"), "application/json", body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", body, b)
		require.Contains(t, string(b), field, body)
	}
	require.Equal(t, client.NodeStatusQueued, e.node("a").Status)
}

func TestListNodesSearchAndTime(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(client.NodeCreate{ID: ptr("n-1"), Type: "task", Queue: ptr("q"), Title: ptr("Resize the Holiday photos")})
	e.mustCreate(client.NodeCreate{ID: ptr("holiday-2"), Type: "task", Queue: ptr("q"), Title: ptr("Send invoices")})
	e.mustCreate(client.NodeCreate{ID: ptr("n-3"), Type: "task", Queue: ptr("q"), Title: ptr("Other")})
	mark := e.clk.Now()
	e.clk.Advance(time.Minute)
	e.mustCreate(client.NodeCreate{ID: ptr("n-4"), Type: "task", Queue: ptr("q"), Title: ptr("Later holiday")})

	ids := func(p client.ListNodesParams) []string {
		t.Helper()
		res, err := e.dispatcher().ListNodesWithResponse(ctx, &p)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		var out []string
		for _, n := range res.JSON200.Items {
			out = append(out, n.ID)
		}
		return out
	}
	require.ElementsMatch(t, []string{"n-1", "holiday-2", "n-4"}, ids(client.ListNodesParams{Q: ptr("HOLIDAY")}))
	require.ElementsMatch(t, []string{"n-4"}, ids(client.ListNodesParams{Q: ptr("holiday"), CreatedAfter: ptr(mark.Add(time.Second))}))
	require.ElementsMatch(t, []string{"n-1", "holiday-2", "n-3"}, ids(client.ListNodesParams{CreatedBefore: ptr(mark.Add(time.Second))}))
	require.ElementsMatch(t, []string{"n-4"}, ids(client.ListNodesParams{UpdatedAfter: ptr(mark.Add(time.Second))}))

	resp, b := e.raw(http.MethodGet, "/v1/nodes?created_after=yesterday", e.token("acme", "head", "dispatcher"), "", "")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	require.Contains(t, string(b), "created_after")
}
