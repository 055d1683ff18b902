package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/nodes"
)

// TestQueueListPages: GET /v1/queues answers a bounded page by name with a
// cursor, and the pages together list every queue once; a bad limit or
// cursor is a 400 naming it.
func TestQueueListPages(t *testing.T) {
	t.Parallel()
	e := start(t)
	const queues = 250
	e.createMany(queues, func(i int) nodes.NodeSpec {
		id, q := fmt.Sprintf("n-%03d", i), fmt.Sprintf("q-%03d", i)
		return nodes.NodeSpec{ID: &id, Type: "task", Queue: &q}
	})
	// A queue with settings alone is listed in its place.
	d := e.dispatcher()
	op, err := d.PauseQueueWithResponse(context.Background(), "q-100a")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, op.StatusCode(), string(op.Body))

	c := e.user("viewer", "reader")
	var names []string
	params := &client.ListQueuesParams{}
	pages := 0
	for {
		res, err := c.ListQueuesWithResponse(context.Background(), params)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.LessOrEqual(t, len(res.JSON200.Items), nodes.QueuesLimitDefault)
		pages++
		for _, q := range res.JSON200.Items {
			names = append(names, q.Queue)
		}
		if res.JSON200.NextCursor == nil {
			break
		}
		params.Cursor = res.JSON200.NextCursor
	}
	require.Equal(t, 3, pages, "251 queues in pages of %d", nodes.QueuesLimitDefault)
	require.Len(t, names, queues+1)
	require.Equal(t, "q-000", names[0])
	require.Equal(t, "q-100a", names[101])
	require.Equal(t, "q-249", names[queues])

	res, err := c.ListQueuesWithResponse(context.Background(), &client.ListQueuesParams{Limit: ptr(1000)})
	require.NoError(t, err)
	require.Len(t, res.JSON200.Items, queues+1)
	require.Nil(t, res.JSON200.NextCursor)

	tok := e.token("acme", "viewer", "reader")
	for _, tc := range []struct{ query, field string }{
		{"limit=0", "limit"}, {"limit=1001", "limit"}, {"limit=x", "limit"},
		{"cursor=nope", "cursor"}, {"cursor=cTpiYWQgbmFtZQ", "cursor"}, // "q:bad name"
	} {
		resp, b := e.raw(http.MethodGet, "/v1/queues?"+tc.query, tok, "", "")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", tc.query, b)
		require.Contains(t, string(b), `"field":"`+tc.field+`"`, tc.query)
	}
}
