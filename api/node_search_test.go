package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/nodes"
)

// TestSearchRefusesInvalidUTF8: q=%FF would fold to U+FFFD and match every
// title holding it; it is a 400 naming q.
func TestSearchRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.mustCreate(client.NodeCreate{ID: ptr("odd"), Type: "task", Title: ptr("a \uFFFD in the title")})
	tok := e.token("acme", "viewer", "reader")
	for _, q := range []string{"%FF", "ab%C3", "%ED%B3%BF"} {
		resp, b := e.raw(http.MethodGet, "/v1/nodes?q="+q, tok, "", "")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", q, b)
		var p problemBody
		require.NoError(t, json.Unmarshal(b, &p))
		require.Equal(t, "q", p.Field)
		require.Contains(t, p.Detail, "UTF-8")
	}
	// The character itself, sent as UTF-8, still finds the title.
	resp, b := e.raw(http.MethodGet, "/v1/nodes?q=%EF%BF%BD", tok, "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"id":"odd"`)
}

// TestSearchReadsABoundedPage: a search that matches nothing reads at most
// nodes.ListScanBudget records per request and answers an empty page with
// a cursor; following the cursors finds what lies beyond, and ends.
func TestSearchReadsABoundedPage(t *testing.T) {
	t.Parallel()
	e := start(t)
	total := nodes.ListScanBudget + nodes.ListScanBudget/2
	e.createMany(total, func(i int) nodes.NodeSpec {
		id, title := fmt.Sprintf("n-%06d", i), fmt.Sprintf("Import batch %d", i)
		if i == total-1 {
			title = "the needle"
		}
		return nodes.NodeSpec{ID: &id, Type: "task", Title: &title}
	})
	ctx := context.Background()
	c := e.user("viewer", "reader")
	params := &client.ListNodesParams{Q: ptr("needle")}
	var pages, found int
	for {
		res, err := c.ListNodesWithResponse(ctx, params)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		pages++
		found += len(res.JSON200.Items)
		if res.JSON200.NextCursor == nil {
			break
		}
		require.Empty(t, res.JSON200.Items, "a page that spent its budget holds no match here")
		params.Cursor = res.JSON200.NextCursor
	}
	require.Equal(t, 1, found)
	require.Equal(t, 2, pages, "%d nodes take two budgets of %d", total, nodes.ListScanBudget)

	// A search that matches nothing ends too, after as many pages.
	params = &client.ListNodesParams{Q: ptr("no such text")}
	pages = 0
	for {
		res, err := c.ListNodesWithResponse(ctx, params)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Empty(t, res.JSON200.Items)
		pages++
		if res.JSON200.NextCursor == nil {
			break
		}
		params.Cursor = res.JSON200.NextCursor
	}
	require.Equal(t, 2, pages)

	// Full pages are unchanged: the budget only ends pages short of limit.
	res, err := c.ListNodesWithResponse(ctx, &client.ListNodesParams{Q: ptr("Import batch"), Limit: ptr(1000)})
	require.NoError(t, err)
	require.Len(t, res.JSON200.Items, 1000)
	require.NotNil(t, res.JSON200.NextCursor)
}
