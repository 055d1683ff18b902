package client_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// No path parameter changes the route. "." and ".." once resolved away
// (url.URL.Parse removes dot segments): the events of node ".." were
// GET /v1/events, the tenant's whole feed, and node "." was the node
// "events". Now each reaches the route it names and is refused there, as no
// node has such an id.
func TestPathParametersStayInTheirSegment(t *testing.T) {
	t.Parallel()
	e := startKeepServer(t, nil)
	var paths []string
	c := e.as("head", "dispatcher", func(d client.HttpRequestDoer) client.HttpRequestDoer {
		return doerFunc(func(r *http.Request) (*http.Response, error) {
			paths = append(paths, r.URL.EscapedPath())
			return d.Do(r)
		})
	})
	ctx := t.Context()
	id, queue := "events", "default"
	created, err := c.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: &id, Type: "task", Queue: &queue})
	require.NoError(t, err)
	require.NotNil(t, created.JSON201, string(created.Body))

	for _, tc := range []struct{ id, path string }{
		{".", "/v1/nodes/%2E/events"},
		{"..", "/v1/nodes/%2E%2E/events"},
		{"../events", "/v1/nodes/..%2Fevents/events"},
		{"a/b", "/v1/nodes/a%2Fb/events"},
	} {
		paths = nil
		res, err := c.ListNodeEventsWithResponse(ctx, tc.id, nil)
		require.NoError(t, err)
		require.Equal(t, []string{tc.path}, paths, tc.id)
		require.Equal(t, http.StatusBadRequest, res.StatusCode(), "%s: %s", tc.id, res.Body)

		got, err := c.GetNodeWithResponse(ctx, tc.id)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, got.StatusCode(), "%s: %s", tc.id, got.Body)
	}

	_, err = c.GetNodeWithResponse(ctx, "")
	require.ErrorContains(t, err, "path parameter id is empty")
	_, err = c.ClaimNextWithResponse(ctx, "..", client.ClaimNextRequest{})
	require.NoError(t, err)
	require.Equal(t, "/v1/queues/%2E%2E/claim", paths[len(paths)-1])
}

type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }
