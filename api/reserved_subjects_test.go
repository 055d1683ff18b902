package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/graphstore"
)

// The prefixes the API gives meaning to, each with a subject that uses it.
var reservedSubjects = map[string]string{
	"node:":     "node:n1",
	"identity:": "identity:alice",
	"schedule:": "schedule:nightly",
}

// No identity may be named with a reserved prefix: a JWT with one is 401,
// an API key for one is 400 on sub, and so is a node's target, a release's
// hand-off and a message's identity address; each detail names the
// prefix, and nothing changes.
func TestReservedPrefixesNameNoIdentity(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	admin, head, alice := e.admin(), e.dispatcher(), e.user("alice", "worker")
	e.mustCreate(task("t1"))
	e.claim(alice, "t1")

	for prefix, sub := range reservedSubjects {
		quoted := `"` + prefix + `"`

		nodes, err := e.user(sub, "admin").ListNodesWithResponse(ctx, &client.ListNodesParams{})
		require.NoError(t, err)
		requireProblem(t, nodes.ApplicationProblemJSON401, http.StatusUnauthorized, client.ProblemCodeUnauthorized)
		require.Contains(t, nodes.ApplicationProblemJSON401.Detail, "token sub must not start with "+quoted)

		key, err := admin.CreateTokenWithResponse(ctx, client.TokenCreate{Sub: sub, Roles: []client.Role{client.RoleWorker}})
		require.NoError(t, err)
		requireBadField(t, key.ApplicationProblemJSON400, "sub", quoted)

		created, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("targeted"), Type: "task", Target: ptr(sub)})
		require.NoError(t, err)
		requireBadField(t, created.ApplicationProblemJSON400, "target", quoted)

		patched, err := head.UpdateNodeWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, "t1", nil, client.NodePatch{Target: client.Value(sub)})
		require.NoError(t, err)
		requireBadField(t, patched.ApplicationProblemJSON400, "target", quoted)

		released, err := alice.ReleaseNodeWithResponse(ctx, "t1", client.ReleaseRequest{To: ptr(sub)})
		require.NoError(t, err)
		requireBadField(t, released.ApplicationProblemJSON400, "to", quoted)

		if prefix != "node:" { // "node:<id>" is a node's address
			sent, err := head.SendMessageWithResponse(ctx, client.MessageCreate{To: sub, Body: "hello"})
			require.NoError(t, err)
			requireBadField(t, sent.ApplicationProblemJSON400, "to", quoted)
		}
	}

	// Nothing changed: no key, no node, t1 untargeted and still alice's.
	keys, err := admin.ListTokensWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, keys.StatusCode(), string(keys.Body))
	require.Empty(t, keys.JSON200.Items)
	gone, err := head.GetNodeWithResponse(ctx, "targeted")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, gone.StatusCode())
	t1, err := head.GetNodeWithResponse(ctx, "t1")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, t1.StatusCode(), string(t1.Body))
	require.Nil(t, t1.JSON200.Target)
	require.NotNil(t, t1.JSON200.Lease)
	require.Equal(t, "alice", t1.JSON200.Lease.By)
}

// requireBadField checks a 400 bad_request on field whose detail contains want.
func requireBadField(t *testing.T, p *client.Problem, field, want string) {
	t.Helper()
	requireProblem(t, p, http.StatusBadRequest, client.ProblemCodeBadRequest)
	require.Equal(t, field, p.Field)
	require.Contains(t, p.Detail, want)
}

// The server signs its own actions (expiries) as "system": no token may act
// under that name, so no event by "system" was made by a client.
func TestSystemNamesNoIdentity(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	nodes, err := e.user(graphstore.SystemSubject, "admin").ListNodesWithResponse(ctx, &client.ListNodesParams{})
	require.NoError(t, err)
	requireProblem(t, nodes.ApplicationProblemJSON401, http.StatusUnauthorized, client.ProblemCodeUnauthorized)
	require.Contains(t, nodes.ApplicationProblemJSON401.Detail, `must not be "system"`)

	key, err := e.admin().CreateTokenWithResponse(ctx, client.TokenCreate{Sub: graphstore.SystemSubject, Roles: []client.Role{client.RoleWorker}})
	require.NoError(t, err)
	requireBadField(t, key.ApplicationProblemJSON400, "sub", `"system"`)
}
