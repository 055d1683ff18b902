package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

func TestIdempotencyKeyReplaysAndRejectsMismatch(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	c := e.dispatcher()
	key := "create-build-1234"

	first, err := c.CreateNodeWithResponse(ctx, &client.CreateNodeParams{IdempotencyKey: ptr(key)}, client.NodeCreate{Type: "build", Queue: ptr("ci")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, first.StatusCode(), string(first.Body))

	again, err := c.CreateNodeWithResponse(ctx, &client.CreateNodeParams{IdempotencyKey: ptr(key)}, client.NodeCreate{Type: "build", Queue: ptr("ci")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, again.StatusCode(), "a replay answers with the first status")
	require.Equal(t, first.JSON201.ID, again.JSON201.ID, "and the same node id (a server-generated one)")

	// Whitespace and key order do not make it another request.
	tok := e.token("acme", "head", "dispatcher")
	resp, body := e.rawWithHeaders(http.MethodPost, "/v1/nodes", tok, `{ "queue": "ci",  "type": "build" }`, map[string]string{"Idempotency-Key": key})
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
	require.Contains(t, string(body), first.JSON201.ID)

	mismatch, err := c.CreateNodeWithResponse(ctx, &client.CreateNodeParams{IdempotencyKey: ptr(key)}, client.NodeCreate{Type: "deploy"})
	require.NoError(t, err)
	requireProblem(t, mismatch.ApplicationProblemJSON422, http.StatusUnprocessableEntity, client.ProblemCodeIdempotencyMismatch)

	batch, err := c.CreateNodesBatchWithResponse(ctx, &client.CreateNodesBatchParams{IdempotencyKey: ptr(key)}, client.NodeBatchCreate{Items: []client.NodeCreate{{Type: "build", Queue: ptr("ci")}}})
	require.NoError(t, err)
	requireProblem(t, batch.ApplicationProblemJSON422, http.StatusUnprocessableEntity, client.ProblemCodeIdempotencyMismatch)

	// Keys are per tenant.
	other, err := e.as(e.token("other", "head", "dispatcher")).CreateNodeWithResponse(ctx, &client.CreateNodeParams{IdempotencyKey: ptr(key)}, client.NodeCreate{Type: "deploy"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, other.StatusCode(), string(other.Body))

	list, err := c.ListNodesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list.JSON200.Items, 1, "replays created nothing")

	// After 24 hours the key is free again.
	e.clk.Advance(24*time.Hour + time.Second)
	fresh, err := e.dispatcher().CreateNodeWithResponse(ctx, &client.CreateNodeParams{IdempotencyKey: ptr(key)}, client.NodeCreate{Type: "deploy"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, fresh.StatusCode(), string(fresh.Body))
	require.NotEqual(t, first.JSON201.ID, fresh.JSON201.ID)
}

func TestIdempotentBatchReplaysTheSameIDs(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	c := e.dispatcher()
	body := client.NodeBatchCreate{Items: []client.NodeCreate{{Type: "a"}, {Type: "b"}, {Type: "c"}}}
	params := &client.CreateNodesBatchParams{IdempotencyKey: ptr("batch-7")}
	first, err := c.CreateNodesBatchWithResponse(ctx, params, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, first.StatusCode(), string(first.Body))
	again, err := c.CreateNodesBatchWithResponse(ctx, params, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, again.StatusCode())
	for i := range first.JSON201.Items {
		require.Equal(t, first.JSON201.Items[i].ID, again.JSON201.Items[i].ID)
	}
	resp, b := e.rawWithHeaders(http.MethodPost, "/v1/nodes", e.token("acme", "head", "dispatcher"), `{"type":"x"}`, map[string]string{"Idempotency-Key": "has space"})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
}
