package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/server"
)

// TestBulkConfirmedIDsBoundTheAction: a confirmation sends the ids its dry
// run selected, and the action touches those alone: nodes that arrived
// after the count are left, and a counted node that no longer matches is
// skipped, not deleted.
func TestBulkConfirmedIDsBoundTheAction(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	for _, id := range []string{"imp-a", "imp-b", "imp-c"} {
		e.mustCreate(client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("imports")})
	}
	filter := &client.NodeFilter{Queue: ptr("imports")}
	dry, err := d.BulkNodesWithResponse(ctx, client.BulkRequest{Action: client.BulkRequestActionDelete, Filter: filter, DryRun: ptr(true)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, dry.StatusCode(), string(dry.Body))
	require.Equal(t, 3, dry.JSON200.Matched)
	require.Equal(t, []string{"imp-a", "imp-b", "imp-c"}, dry.JSON200.Selected)
	require.Empty(t, dry.JSON200.Skipped)

	// Between the count and the confirmation, 40 nodes arrive and one of
	// the counted moves to another queue.
	for i := range 40 {
		e.mustCreate(client.NodeCreate{ID: ptr(fmt.Sprintf("late-%02d", i)), Type: "task", Queue: ptr("imports")})
	}
	patch, err := d.UpdateNodeWithBodyWithResponse(ctx, "imp-c", nil, "application/merge-patch+json", strings.NewReader(`{"queue":"other"}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, patch.StatusCode(), string(patch.Body))

	res, err := d.BulkNodesWithResponse(ctx, client.BulkRequest{Action: client.BulkRequestActionDelete, Filter: filter, Ids: &dry.JSON200.Selected})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Equal(t, 2, res.JSON200.Matched)
	require.Equal(t, []string{"imp-a", "imp-b"}, res.JSON200.Selected)
	require.Equal(t, []string{"imp-a", "imp-b"}, res.JSON200.Affected)
	require.Equal(t, []string{"imp-c"}, res.JSON200.Skipped)
	require.Empty(t, res.JSON200.Failed)

	require.Equal(t, client.NodeStatusQueued, e.node("imp-c").Status, "the node that left the filter is kept")
	list, err := d.ListNodesWithResponse(ctx, &client.ListNodesParams{Queue: ptr("imports"), Limit: ptr(1000)})
	require.NoError(t, err)
	require.Len(t, list.JSON200.Items, 40, "the nodes that arrived after the count are kept")

	// An empty confirmation touches nothing; it does not select afresh.
	res, err = d.BulkNodesWithResponse(ctx, client.BulkRequest{Action: client.BulkRequestActionDelete, Filter: filter, Ids: &[]string{}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Zero(t, res.JSON200.Matched)
	require.Empty(t, res.JSON200.Affected)
	list, err = d.ListNodesWithResponse(ctx, &client.ListNodesParams{Queue: ptr("imports"), Limit: ptr(1000)})
	require.NoError(t, err)
	require.Len(t, list.JSON200.Items, 40)
}

// TestBulkRefusesBadInput: each bad bulk request is a 400 naming its field,
// and changes nothing.
func TestBulkRefusesBadInput(t *testing.T) {
	t.Parallel()
	// A body that names more ids than a bulk may touch, under the body limit.
	e := start(t, func(c *server.Config) { c.MaxBodyBytes = 1 << 20 })
	d := e.token("acme", "head", "dispatcher")
	w := e.user("w1", "worker")
	e.mustCreate(client.NodeCreate{ID: ptr("held"), Type: "task", Queue: ptr("q")})
	e.mustClaim(w, "held", 0) // makes identity:w1
	e.mustCreate(client.NodeCreate{ID: ptr("idle"), Type: "task", Queue: ptr("q")})

	tooMany := make([]string, nodes.BulkLimitMax+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("n-%05d", i)
	}
	manyIDs, err := json.Marshal(tooMany)
	require.NoError(t, err)
	long := strings.Repeat("r", nodes.MaxReasonLength+1)
	requireRefused(t, e, []badInput{
		{method: http.MethodPost, path: "/v1/nodes/bulk", tok: d, field: "reason",
			body: `{"action":"cancel","filter":{"queue":"q"},"reason":"` + long + `"}`},
		{method: http.MethodPost, path: "/v1/nodes/bulk", tok: d, field: "filter.type",
			body: `{"action":"delete","filter":{"type":"identity"},"dry_run":true}`},
		{method: http.MethodPost, path: "/v1/nodes/bulk", tok: d, field: "filter.q",
			body: "{\"action\":\"delete\",\"filter\":{\"q\":\"\\udcff\"}}"},
		{method: http.MethodPost, path: "/v1/nodes/bulk", tok: d, field: "ids",
			body: `{"action":"delete","filter":{"queue":"q"},"ids":["idle","idle"]}`},
		{method: http.MethodPost, path: "/v1/nodes/bulk", tok: d, field: "ids",
			body: `{"action":"delete","filter":{"queue":"q"},"ids":["no spaces"]}`},
		{method: http.MethodPost, path: "/v1/nodes/bulk", tok: d, field: "ids",
			body: `{"action":"delete","filter":{"queue":"q"},"ids":` + string(manyIDs) + `}`},
		{method: http.MethodPost, path: "/v1/nodes/idle/cancel", tok: d, field: "reason",
			body: `{"reason":"` + long + `"}`},
	}, "")
	require.Equal(t, client.NodeStatusQueued, e.node("idle").Status)
	require.Equal(t, client.NodeStatusRunning, e.node("held").Status)
	require.Equal(t, "identity", e.node("identity:w1").Type)

	// A reason at the bound is taken.
	st, b := post(e, d, "/v1/nodes/bulk", `{"action":"cancel","filter":{"queue":"q"},"reason":"`+long[1:]+`"}`)
	require.Equal(t, http.StatusOK, st, string(b))
	require.Equal(t, client.NodeStatusCancelled, e.node("idle").Status)

	// An identity node named in ids is never touched: it is skipped.
	st, b = post(e, d, "/v1/nodes/bulk", `{"action":"delete","ids":["identity:w1"]}`)
	require.Equal(t, http.StatusOK, st, string(b))
	require.Contains(t, string(b), `"skipped":["identity:w1"]`)
	require.Equal(t, "identity", e.node("identity:w1").Type)
}
