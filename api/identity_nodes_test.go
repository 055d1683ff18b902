package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// TestIdentityNodesAreNotWork: the identity:<sub> node a claim makes is never
// ready, is not claimable, and is left out of node listings unless they ask
// for type=identity.
func TestIdentityNodesAreNotWork(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	alice, reader := e.user("alice"), e.user("viewer", "reader")
	e.mustCreate(task("w1"))
	e.mustClaim(alice, "w1", 0) // makes identity:alice

	id := e.node("identity:alice")
	require.Equal(t, "identity", id.Type)
	require.False(t, id.Ready, "an identity node is never ready")
	p := e.requireNotClaimable(alice, "identity:alice", "terminal")
	require.Contains(t, p.Detail, "not work")

	ids := func(params *client.ListNodesParams) []string {
		t.Helper()
		res, err := reader.ListNodesWithResponse(ctx, params)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		var out []string
		for _, n := range res.JSON200.Items {
			out = append(out, n.ID)
		}
		return out
	}
	require.Equal(t, []string{"w1"}, ids(nil))
	require.Empty(t, ids(&client.ListNodesParams{Ready: ptr(true)}))
	require.Equal(t, []string{"w1"}, ids(&client.ListNodesParams{Ready: ptr(false)}))
	require.Equal(t, []string{"w1"}, ids(&client.ListNodesParams{Status: ptr(client.NodeStatusRunning)}))
	require.Empty(t, ids(&client.ListNodesParams{Status: ptr(client.NodeStatusOpen)}), "identity nodes are open, but not listed")
	require.Equal(t, []string{"identity:alice"}, ids(&client.ListNodesParams{Type: ptr("identity")}))
	require.Empty(t, ids(&client.ListNodesParams{Type: ptr("identity"), Ready: ptr(true)}))
}
