package intake

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/testserver"
)

// tether is a real Tether server (Badger in a temporary directory) and the
// intake's creator over its API handler.
type tether struct {
	srv     *testserver.Server
	creator *HandlerCreator
}

func startTether(t *testing.T, opts ...testserver.Option) *tether {
	t.Helper()
	srv := testserver.Start(t, opts...)
	return &tether{srv: srv, creator: &HandlerCreator{
		Handler: srv.API.Handler(),
		Signer:  &Signer{Secret: testserver.Secret, Clock: srv.Clock},
	}}
}

// client is a generated client of tenant, as a dispatcher.
func (s *tether) client(t *testing.T, tenant string) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(s.srv.URL, client.WithBearerToken(s.srv.Token(tenant, "tester", "dispatcher")))
	require.NoError(t, err)
	return c
}

// nodes lists tenant's nodes of queue (at most 1000).
func (s *tether) nodes(t *testing.T, tenant, queue string) []client.Node {
	t.Helper()
	var out []client.Node
	var cursor *string
	for {
		limit := 1000
		res, err := s.client(t, tenant).ListNodesWithResponse(context.Background(), &client.ListNodesParams{Queue: &queue, Limit: &limit, Cursor: cursor})
		require.NoError(t, err)
		require.NotNil(t, res.JSON200, "%d %s", res.StatusCode(), res.Body)
		out = append(out, res.JSON200.Items...)
		if res.JSON200.NextCursor == nil || *res.JSON200.NextCursor == "" {
			return out
		}
		cursor = res.JSON200.NextCursor
	}
}
