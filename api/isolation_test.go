package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// acmeWorld is what TestTenantsAreIsolated builds in tenant acme before
// tenant other tries to reach it.
type acmeWorld struct {
	nodes map[string]client.Node
	lease client.Lease
	keyID string
	edges []client.Edge
}

func (e *env) buildAcme(t *testing.T) acmeWorld {
	t.Helper()
	ctx := context.Background()
	d := e.dispatcher()
	e.mustCreate(client.NodeCreate{ID: ptr("a-root"), Type: "task", Title: ptr("acme root")})
	e.mustCreate(client.NodeCreate{ID: ptr("a-child"), Type: "task", Queue: ptr("default"), Parent: ptr("a-root")})
	e.mustCreate(client.NodeCreate{ID: ptr("a-dep"), Type: "task", Queue: ptr("default")})
	e.mustCreate(client.NodeCreate{ID: ptr("a-waits"), Type: "task", Queue: ptr("default"), DependsOn: &[]string{"a-dep"}})
	rel, err := d.CreateEdgeWithResponse(ctx, client.EdgeCreate{From: "a-root", Type: "relates_to", To: "a-dep"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, rel.StatusCode(), string(rel.Body))

	claim, err := e.user("alice").ClaimNodeWithResponse(ctx, "a-child", client.ClaimRequest{Session: ptr("s1")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))

	key, err := e.admin().CreateTokenWithResponse(ctx, client.TokenCreate{Sub: "acme-bot", Roles: []client.Role{client.RoleWorker}})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, key.StatusCode(), string(key.Body))

	return e.snapshotAcme(t, key.JSON201.ID)
}

// snapshotAcme reads back everything of acme that other must not change.
func (e *env) snapshotAcme(t *testing.T, keyID string) acmeWorld {
	t.Helper()
	ctx := context.Background()
	r := e.user("auditor", "reader")
	w := acmeWorld{nodes: map[string]client.Node{}, keyID: keyID}
	for _, params := range []*client.ListNodesParams{nil, {Type: ptr("identity")}} { // identity nodes only when asked for
		list, err := r.ListNodesWithResponse(ctx, params)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, list.StatusCode(), string(list.Body))
		for _, n := range list.JSON200.Items {
			w.nodes[n.ID] = n
		}
	}
	leases, err := r.ListLeasesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Len(t, leases.JSON200.Items, 1)
	w.lease = leases.JSON200.Items[0]
	for _, id := range []string{"a-root", "a-child", "a-dep", "a-waits"} {
		edges, err := r.ListNodeEdgesWithResponse(ctx, id, &client.ListNodeEdgesParams{IncludeRetired: ptr(true), Dir: ptr(client.EdgeDirectionOut)})
		require.NoError(t, err)
		w.edges = append(w.edges, edges.JSON200.Items...)
	}
	return w
}

func TestTenantsAreIsolated(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	before := e.buildAcme(t)
	require.Len(t, before.nodes, 5, "four work nodes and identity:alice")
	require.Len(t, before.edges, 4, "parent_of, depends_on, relates_to and assigned")

	// An admin of another tenant, which includes every lower role.
	other := e.as(e.token("other", "root", "admin"))
	notFound := func(name string, p *client.Problem, status int, body []byte) {
		t.Helper()
		require.Equal(t, http.StatusNotFound, status, "%s: %s", name, body)
		requireProblem(t, p, http.StatusNotFound, client.ProblemCodeNotFound)
	}

	for _, id := range []string{"a-root", "a-child", "a-dep", "identity:alice"} {
		get, err := other.GetNodeWithResponse(ctx, id)
		require.NoError(t, err)
		notFound("get "+id, get.ApplicationProblemJSON404, get.StatusCode(), get.Body)
		patch, err := other.UpdateNodeWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, id, nil, client.NodePatch{Title: client.Value("owned")})
		require.NoError(t, err)
		notFound("patch "+id, patch.ApplicationProblemJSON404, patch.StatusCode(), patch.Body)
		ifMatch, err := other.UpdateNodeWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, id, &client.UpdateNodeParams{IfMatch: ptr(`"99"`)}, client.NodePatch{Title: client.Value("owned")})
		require.NoError(t, err)
		notFound("patch If-Match "+id, ifMatch.ApplicationProblemJSON404, ifMatch.StatusCode(), ifMatch.Body)
		del, err := other.DeleteNodeWithResponse(ctx, id, nil)
		require.NoError(t, err)
		notFound("delete "+id, del.ApplicationProblemJSON404, del.StatusCode(), del.Body)
		force, err := other.DeleteNodeWithResponse(ctx, id, &client.DeleteNodeParams{Force: ptr(true)})
		require.NoError(t, err)
		notFound("delete force "+id, force.ApplicationProblemJSON404, force.StatusCode(), force.Body)
		edges, err := other.ListNodeEdgesWithResponse(ctx, id, &client.ListNodeEdgesParams{IncludeRetired: ptr(true)})
		require.NoError(t, err)
		notFound("edges "+id, edges.ApplicationProblemJSON404, edges.StatusCode(), edges.Body)
		sub, err := other.GetSubgraphWithResponse(ctx, id, nil)
		require.NoError(t, err)
		notFound("subgraph "+id, sub.ApplicationProblemJSON404, sub.StatusCode(), sub.Body)
	}

	// Every lease endpoint, on the running node (a-child, held by alice) and
	// on one at rest (a-dep): never a 409 that would leak a holder.
	for _, id := range []string{"a-child", "a-dep"} {
		claim, err := other.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{})
		require.NoError(t, err)
		notFound("claim "+id, claim.ApplicationProblemJSON404, claim.StatusCode(), claim.Body)
		renew, err := other.RenewLeaseWithResponse(ctx, id, client.RenewRequest{})
		require.NoError(t, err)
		notFound("renew "+id, renew.ApplicationProblemJSON404, renew.StatusCode(), renew.Body)
		ext, err := other.ExtendLeaseWithResponse(ctx, id, client.ExtendRequest{MS: 60000})
		require.NoError(t, err)
		notFound("extend "+id, ext.ApplicationProblemJSON404, ext.StatusCode(), ext.Body)
		rel, err := other.ReleaseNodeWithResponse(ctx, id, client.ReleaseRequest{})
		require.NoError(t, err)
		notFound("release "+id, rel.ApplicationProblemJSON404, rel.StatusCode(), rel.Body)
		handoff, err := other.ReleaseNodeWithResponse(ctx, id, client.ReleaseRequest{To: ptr("root")})
		require.NoError(t, err)
		notFound("handoff "+id, handoff.ApplicationProblemJSON404, handoff.StatusCode(), handoff.Body)
		done, err := other.CompleteNodeWithResponse(ctx, id, client.CompleteRequest{Result: "stolen"})
		require.NoError(t, err)
		notFound("complete "+id, done.ApplicationProblemJSON404, done.StatusCode(), done.Body)
		for _, status := range []client.StatusRequestStatus{client.StatusRequestStatusRunning, client.StatusRequestStatusDone, client.StatusRequestStatusTodo, client.StatusRequestStatusCancelled} {
			res, err := other.SetNodeStatusWithResponse(ctx, id, client.StatusRequest{Status: status})
			require.NoError(t, err)
			notFound("status "+string(status)+" "+id, res.ApplicationProblemJSON404, res.StatusCode(), res.Body)
		}
		cancel, err := other.CancelNodeWithResponse(ctx, id, client.CancelRequest{})
		require.NoError(t, err)
		notFound("cancel "+id, cancel.ApplicationProblemJSON404, cancel.StatusCode(), cancel.Body)
	}

	// Edges between acme's nodes, and acme's edges.
	for _, edge := range []client.EdgeCreate{
		{From: "a-root", Type: "relates_to", To: "a-waits"},
		{From: "a-root", Type: "relates_to", To: "a-dep"},  // exists in acme: still 404, not 409
		{From: "a-dep", Type: "depends_on", To: "a-waits"}, // would be a cycle in acme: still 404
		{From: "a-dep", Type: "parent_of", To: "a-child"},  // a-child has a parent in acme: still 404
	} {
		res, err := other.CreateEdgeWithResponse(ctx, edge)
		require.NoError(t, err)
		notFound("create edge "+edge.From+" "+edge.Type+" "+edge.To, res.ApplicationProblemJSON404, res.StatusCode(), res.Body)
	}
	for _, edge := range []client.DeleteEdgeParams{
		{From: "a-root", Type: "parent_of", To: "a-child"},
		{From: "a-waits", Type: "depends_on", To: "a-dep"},
		{From: "a-root", Type: "relates_to", To: "a-dep"},
		{From: "a-child", Type: "assigned", To: "identity:alice"},
	} {
		res, err := other.DeleteEdgeWithResponse(ctx, &edge)
		require.NoError(t, err)
		if edge.Type == "assigned" {
			// assigned is never the caller's to retire: a 400 is as good as a
			// 404 here, as long as acme's edge stays (checked below).
			require.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound}, res.StatusCode(), string(res.Body))
			continue
		}
		notFound("delete edge "+edge.From+" "+edge.Type+" "+edge.To, res.ApplicationProblemJSON404, res.StatusCode(), res.Body)
	}

	// New nodes of other cannot hang off acme's.
	for name, body := range map[string]client.NodeCreate{
		"parent":     {ID: ptr("o-child"), Type: "task", Parent: ptr("a-root")},
		"depends_on": {ID: ptr("o-waits"), Type: "task", DependsOn: &[]string{"a-dep"}},
	} {
		res, err := other.CreateNodeWithResponse(ctx, nil, body)
		require.NoError(t, err)
		notFound("create with acme "+name, res.ApplicationProblemJSON404, res.StatusCode(), res.Body)
	}

	// acme's API key, by its id.
	delKey, err := other.DeleteTokenWithResponse(ctx, before.keyID)
	require.NoError(t, err)
	notFound("delete token", delKey.ApplicationProblemJSON404, delKey.StatusCode(), delKey.Body)

	// Lists in other never show acme's data.
	nodes, err := other.ListNodesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, nodes.JSON200.Items)
	for _, q := range []client.ListNodesParams{{Parent: ptr("a-root")}, {Holder: ptr("alice")}, {Queue: ptr("default")}, {Type: ptr("identity")}} {
		filtered, err := other.ListNodesWithResponse(ctx, &q)
		require.NoError(t, err)
		require.Empty(t, filtered.JSON200.Items)
	}
	leases, err := other.ListLeasesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, leases.JSON200.Items)
	held, err := other.ListLeasesWithResponse(ctx, &client.ListLeasesParams{Holder: ptr("alice")})
	require.NoError(t, err)
	require.Empty(t, held.JSON200.Items)
	tokens, err := other.ListTokensWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, tokens.JSON200.Items)
	ten, err := other.GetTenantWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, "other", ten.JSON200.ID)

	// Nothing in acme changed: versions, the lease, the edges, the key.
	after := e.snapshotAcme(t, before.keyID)
	require.Equal(t, before.nodes, after.nodes)
	require.Equal(t, before.lease, after.lease)
	require.Equal(t, before.edges, after.edges)
	acmeKeys, err := e.admin().ListTokensWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Len(t, acmeKeys.JSON200.Items, 1)
	renew, err := e.user("alice").RenewLeaseWithResponse(ctx, "a-child", client.RenewRequest{Fence: ptr(before.lease.Fence)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, renew.StatusCode(), "alice still holds her lease: %s", renew.Body)
}

func TestSameIDsLiveIndependentlyInEachTenant(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	acme := e.dispatcher()
	other := e.as(e.token("other", "head", "dispatcher"))

	for _, c := range []struct {
		cl    *client.ClientWithResponses
		title string
	}{{acme, "in acme"}, {other, "in other"}} {
		for _, id := range []string{"t1", "t2"} {
			res, err := c.cl.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("default"), Title: ptr(c.title)})
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.StatusCode(), "%s %s: %s", c.title, id, res.Body)
			require.EqualValues(t, 1, res.JSON201.Version)
		}
		edge, err := c.cl.CreateEdgeWithResponse(ctx, client.EdgeCreate{From: "t1", Type: "depends_on", To: "t2"})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, edge.StatusCode(), "%s: %s", c.title, edge.Body)
	}
	got, err := acme.GetNodeWithResponse(ctx, "t1")
	require.NoError(t, err)
	require.Equal(t, "in acme", got.JSON200.Title)
	dup, err := other.CreateNodeWithResponse(ctx, nil, task("t1"))
	require.NoError(t, err)
	requireProblem(t, dup.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeAlreadyExists)

	// An Idempotency-Key is per tenant: other's use of acme's key is a fresh
	// request, neither a replay nor a mismatch.
	key := &client.CreateNodeParams{IdempotencyKey: ptr("create-once")}
	first, err := acme.CreateNodeWithResponse(ctx, key, task("idem-acme"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, first.StatusCode(), string(first.Body))
	fresh, err := other.CreateNodeWithResponse(ctx, key, task("idem-other"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, fresh.StatusCode(), string(fresh.Body))
	require.Equal(t, "idem-other", fresh.JSON201.ID)
	replay, err := acme.CreateNodeWithResponse(ctx, key, task("idem-acme"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, replay.StatusCode(), string(replay.Body))
	require.Equal(t, "idem-acme", replay.JSON201.ID, "acme's key still replays acme's answer")
	leaked, err := other.GetNodeWithResponse(ctx, "idem-acme")
	require.NoError(t, err)
	requireProblem(t, leaked.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	got, err = other.GetNodeWithResponse(ctx, "t1")
	require.NoError(t, err)
	require.Equal(t, "in other", got.JSON200.Title)

	// A claim in one tenant is invisible to the other, even for the same
	// subject: alice of acme and alice of other are two identities.
	aliceAcme, aliceOther := e.user("alice"), e.as(e.token("other", "alice"))
	claimAcme, err := aliceAcme.ClaimNodeWithResponse(ctx, "t2", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claimAcme.StatusCode(), string(claimAcme.Body))
	require.EqualValues(t, 1, claimAcme.JSON200.Lease.Fence)
	idOther, err := other.GetNodeWithResponse(ctx, "identity:alice")
	require.NoError(t, err)
	requireProblem(t, idOther.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	second, err := aliceOther.ClaimNodeWithResponse(ctx, "t2", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, second.StatusCode(), "other's t2 is free: %s", second.Body)
	require.False(t, second.JSON200.Renewed, "a new lease, not a renewal of acme's")
	require.EqualValues(t, 1, second.JSON200.Lease.Fence, "fences count per tenant's node")

	for _, c := range []*client.ClientWithResponses{acme, other} {
		id, err := c.GetNodeWithResponse(ctx, "identity:alice")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, id.StatusCode(), string(id.Body))
		require.Equal(t, "identity", id.JSON200.Type)
		carried, err := c.ListNodeEdgesWithResponse(ctx, "identity:alice", &client.ListNodeEdgesParams{Dir: ptr(client.EdgeDirectionIn), Type: ptr("assigned"), IncludeRetired: ptr(true)})
		require.NoError(t, err)
		require.Len(t, carried.JSON200.Items, 1, "each tenant's identity node carries only its own claims")
		leases, err := c.ListLeasesWithResponse(ctx, nil)
		require.NoError(t, err)
		require.Len(t, leases.JSON200.Items, 1)
	}

	done, err := aliceOther.CompleteNodeWithResponse(ctx, "t2", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
	t1Other, err := other.GetNodeWithResponse(ctx, "t1")
	require.NoError(t, err)
	require.True(t, t1Other.JSON200.Ready, "other's t1 is unblocked by other's t2")
	t1Acme, err := acme.GetNodeWithResponse(ctx, "t1")
	require.NoError(t, err)
	require.False(t, t1Acme.JSON200.Ready, "acme's t1 still waits for acme's t2")
	require.Equal(t, []string{"t2"}, t1Acme.JSON200.BlockedBy)
	t2Acme, err := acme.GetNodeWithResponse(ctx, "t2")
	require.NoError(t, err)
	require.Equal(t, client.NodeStatusRunning, t2Acme.JSON200.Status)
}
