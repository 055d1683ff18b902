package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// mustEdge creates an edge with the dispatcher and returns it.
func (e *env) mustEdge(d *client.ClientWithResponses, from, typ, to string, props map[string]any) client.Edge {
	e.t.Helper()
	body := client.EdgeCreate{From: from, Type: typ, To: to}
	if props != nil {
		body.Props = &props
	}
	res, err := d.CreateEdgeWithResponse(context.Background(), body)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusCreated, res.StatusCode(), "%s %s %s: %s", from, typ, to, res.Body)
	return *res.JSON201
}

func nodeIDs(nodes []client.Node) []string {
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	return ids
}

func edgeKeys(edges []client.Edge) []string {
	keys := make([]string, len(edges))
	for i, e := range edges {
		keys[i] = e.From + " " + e.Type + " " + e.To
	}
	return keys
}

func TestCreateEdgeShapeTypesAndErrors(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	for _, id := range []string{"a", "b", "c", "x", "y"} {
		e.mustCreate(task(id))
	}

	res, err := d.CreateEdgeWithResponse(ctx, client.EdgeCreate{From: "a", Type: "depends_on", To: "b"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	edge := res.JSON201
	require.Equal(t, "a", edge.From)
	require.Equal(t, "depends_on", edge.Type)
	require.Equal(t, "b", edge.To)
	require.Equal(t, map[string]any{"on_fail": "cancel"}, edge.Props, "on_fail defaults to cancel")
	require.Equal(t, "head", edge.CreatedBy)
	require.Equal(t, e.clk.Now().UnixMilli(), edge.CreatedAt.UnixMilli())
	require.Nil(t, edge.RetiredAt)
	require.Contains(t, string(res.Body), `"retired_at":null`)

	custom := e.mustEdge(d, "a", "relates_to", "x", map[string]any{"why": "same module"})
	require.Equal(t, "relates_to", custom.Type)
	require.Equal(t, map[string]any{"why": "same module"}, custom.Props, "a custom edge keeps its props as given")
	ignore := e.mustEdge(d, "x", "depends_on", "y", map[string]any{"on_fail": "ignore"})
	require.Equal(t, "ignore", ignore.Props["on_fail"])

	bad := map[string]client.EdgeCreate{
		"assigned":          {From: "a", Type: "assigned", To: "c"},
		"bad type":          {From: "a", Type: "Bad-Type", To: "c"},
		"type with a digit": {From: "a", Type: "1st", To: "c"},
		"type too long":     {From: "a", Type: strings.Repeat("t", 65), To: "c"},
		"bad from":          {From: "-a", Type: "relates_to", To: "c"},
		"bad on_fail":       {From: "c", Type: "depends_on", To: "a", Props: &map[string]any{"on_fail": "explode"}},
		"on_fail not text":  {From: "c", Type: "depends_on", To: "a", Props: &map[string]any{"on_fail": true}},
	}
	for name, body := range bad {
		res, err := d.CreateEdgeWithResponse(ctx, body)
		require.NoError(t, err, name)
		require.Equal(t, http.StatusBadRequest, res.StatusCode(), "%s: %s", name, res.Body)
		requireProblem(t, res.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	}
	onFail, err := d.CreateEdgeWithResponse(ctx, bad["bad on_fail"])
	require.NoError(t, err)
	require.Equal(t, "props.on_fail", onFail.ApplicationProblemJSON400.Field)
	tok := e.token("acme", "head", "dispatcher")
	for name, body := range map[string]string{
		"unknown field": `{"from":"a","type":"relates_to","to":"c","typo":1}`,
		"no type":       `{"from":"a","to":"c"}`,
		"malformed":     `{"from":"a",`,
	} {
		resp, b := e.raw(http.MethodPost, "/v1/edges", tok, "application/json", body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", name, b)
	}

	for _, body := range []client.EdgeCreate{
		{From: "a", Type: "relates_to", To: "nope"},
		{From: "nope", Type: "depends_on", To: "a"},
		{From: "nope", Type: "parent_of", To: "c"},
		{From: "a", Type: "parent_of", To: "nope"},
	} {
		res, err := d.CreateEdgeWithResponse(ctx, body)
		require.NoError(t, err)
		requireProblem(t, res.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	}

	dup, err := d.CreateEdgeWithResponse(ctx, client.EdgeCreate{From: "a", Type: "depends_on", To: "b"})
	require.NoError(t, err)
	requireProblem(t, dup.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeAlreadyExists)
	dupCustom, err := d.CreateEdgeWithResponse(ctx, client.EdgeCreate{From: "a", Type: "relates_to", To: "x", Props: &map[string]any{"why": "other"}})
	require.NoError(t, err)
	requireProblem(t, dupCustom.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeAlreadyExists)
	reverse, err := d.CreateEdgeWithResponse(ctx, client.EdgeCreate{From: "x", Type: "relates_to", To: "a"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, reverse.StatusCode(), "custom types may point both ways: %s", reverse.Body)

	worker, err := e.user("alice").CreateEdgeWithResponse(ctx, client.EdgeCreate{From: "a", Type: "relates_to", To: "c"})
	require.NoError(t, err)
	requireProblem(t, worker.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)

	out, err := d.ListNodeEdgesWithResponse(ctx, "a", &client.ListNodeEdgesParams{Dir: ptr(client.EdgeDirectionOut)})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a depends_on b", "a relates_to x"}, edgeKeys(out.JSON200.Items), "no refused edge landed")
}

func TestEdgeCyclesAndOneParent(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	for _, id := range []string{"a", "b", "c", "p1", "p2", "kid", "x", "y"} {
		e.mustCreate(task(id))
	}

	e.mustEdge(d, "a", "depends_on", "b", nil)
	e.mustEdge(d, "b", "depends_on", "c", nil)
	for _, body := range []client.EdgeCreate{
		{From: "c", Type: "depends_on", To: "a"}, // a→b→c→a
		{From: "a", Type: "depends_on", To: "a"}, // a self loop
		{From: "c", Type: "parent_of", To: "a"},  // parent_of closing a depends_on path
		{From: "b", Type: "parent_of", To: "a"},
	} {
		res, err := d.CreateEdgeWithResponse(ctx, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, res.StatusCode(), "%s %s %s: %s", body.From, body.Type, body.To, res.Body)
		requireProblem(t, res.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeCycle)
	}
	ok, err := d.CreateEdgeWithResponse(ctx, client.EdgeCreate{From: "c", Type: "relates_to", To: "a"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, ok.StatusCode(), "custom types take no part in cycles: %s", ok.Body)

	// parent_of then depends_on the other way.
	e.mustEdge(d, "x", "parent_of", "y", nil)
	back, err := d.CreateEdgeWithResponse(ctx, client.EdgeCreate{From: "y", Type: "depends_on", To: "x"})
	require.NoError(t, err)
	requireProblem(t, back.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeCycle)
	a, err := d.GetNodeWithResponse(ctx, "a")
	require.NoError(t, err)
	require.Nil(t, a.JSON200.Parent, "a refused parent_of sets no parent")

	// One parent per child; parent_of mirrors into the child's parent field.
	e.mustEdge(d, "p1", "parent_of", "kid", nil)
	kid, err := d.GetNodeWithResponse(ctx, "kid")
	require.NoError(t, err)
	require.Equal(t, "p1", *kid.JSON200.Parent)
	second, err := d.CreateEdgeWithResponse(ctx, client.EdgeCreate{From: "p2", Type: "parent_of", To: "kid"})
	require.NoError(t, err)
	requireProblem(t, second.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeConflict)
	children, err := d.ListNodesWithResponse(ctx, &client.ListNodesParams{Parent: ptr("p1")})
	require.NoError(t, err)
	require.Equal(t, []string{"kid"}, nodeIDs(children.JSON200.Items))
	none, err := d.ListNodesWithResponse(ctx, &client.ListNodesParams{Parent: ptr("p2")})
	require.NoError(t, err)
	require.Empty(t, none.JSON200.Items)

	// Retiring the parent_of edge clears the parent; a new parent may follow.
	del, err := d.DeleteEdgeWithResponse(ctx, &client.DeleteEdgeParams{From: "p1", Type: "parent_of", To: "kid"})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode(), string(del.Body))
	kid, err = d.GetNodeWithResponse(ctx, "kid")
	require.NoError(t, err)
	require.Nil(t, kid.JSON200.Parent)
	children, err = d.ListNodesWithResponse(ctx, &client.ListNodesParams{Parent: ptr("p1")})
	require.NoError(t, err)
	require.Empty(t, children.JSON200.Items)
	live, err := d.ListNodeEdgesWithResponse(ctx, "kid", nil)
	require.NoError(t, err)
	require.Empty(t, live.JSON200.Items, "retired edges are hidden by default")
	hist, err := d.ListNodeEdgesWithResponse(ctx, "kid", &client.ListNodeEdgesParams{IncludeRetired: ptr(true)})
	require.NoError(t, err)
	require.Len(t, hist.JSON200.Items, 1)
	require.Equal(t, "p1 parent_of kid", edgeKeys(hist.JSON200.Items)[0])
	require.NotNil(t, hist.JSON200.Items[0].RetiredAt)
	require.Equal(t, e.clk.Now().UnixMilli(), hist.JSON200.Items[0].RetiredAt.UnixMilli())

	again, err := d.DeleteEdgeWithResponse(ctx, &client.DeleteEdgeParams{From: "p1", Type: "parent_of", To: "kid"})
	require.NoError(t, err)
	requireProblem(t, again.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	never, err := d.DeleteEdgeWithResponse(ctx, &client.DeleteEdgeParams{From: "a", Type: "relates_to", To: "c"})
	require.NoError(t, err)
	requireProblem(t, never.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	badType, err := d.DeleteEdgeWithResponse(ctx, &client.DeleteEdgeParams{From: "a", Type: "Bad-Type", To: "b"})
	require.NoError(t, err)
	requireProblem(t, badType.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	forbidden, err := e.user("alice").DeleteEdgeWithResponse(ctx, &client.DeleteEdgeParams{From: "a", Type: "depends_on", To: "b"})
	require.NoError(t, err)
	requireProblem(t, forbidden.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)

	e.mustEdge(d, "p2", "parent_of", "kid", nil)
	kid, err = d.GetNodeWithResponse(ctx, "kid")
	require.NoError(t, err)
	require.Equal(t, "p2", *kid.JSON200.Parent)

	// A retired depends_on no longer closes a cycle; re-adding it makes a new live edge.
	del, err = d.DeleteEdgeWithResponse(ctx, &client.DeleteEdgeParams{From: "b", Type: "depends_on", To: "c"})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode(), string(del.Body))
	e.mustEdge(d, "c", "depends_on", "a", nil)
	readd, err := d.CreateEdgeWithResponse(ctx, client.EdgeCreate{From: "b", Type: "depends_on", To: "c"})
	require.NoError(t, err)
	requireProblem(t, readd.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeCycle)
}

func TestListNodeEdgesDirTypeRetiredAndPaging(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	for _, id := range []string{"hub", "in1", "in2", "o1", "o2", "o3", "o4", "o5"} {
		e.mustCreate(task(id))
	}
	e.mustEdge(d, "hub", "depends_on", "o1", nil)
	e.mustEdge(d, "hub", "relates_to", "o2", nil)
	e.mustEdge(d, "hub", "relates_to", "o3", nil)
	e.mustEdge(d, "hub", "parent_of", "o4", nil)
	e.mustEdge(d, "hub", "relates_to", "o5", nil)
	e.mustEdge(d, "in1", "relates_to", "hub", nil)
	e.mustEdge(d, "in2", "depends_on", "hub", nil)

	list := func(p *client.ListNodeEdgesParams) []string {
		t.Helper()
		res, err := e.user("viewer", "reader").ListNodeEdgesWithResponse(ctx, "hub", p)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Nil(t, res.JSON200.NextCursor)
		return edgeKeys(res.JSON200.Items)
	}
	outs := []string{"hub depends_on o1", "hub relates_to o2", "hub relates_to o3", "hub parent_of o4", "hub relates_to o5"}
	ins := []string{"in1 relates_to hub", "in2 depends_on hub"}
	require.ElementsMatch(t, outs, list(&client.ListNodeEdgesParams{Dir: ptr(client.EdgeDirectionOut)}))
	require.ElementsMatch(t, ins, list(&client.ListNodeEdgesParams{Dir: ptr(client.EdgeDirectionIn)}))
	both := list(nil)
	require.ElementsMatch(t, append(slices.Clone(outs), ins...), both, "dir defaults to both")
	require.ElementsMatch(t, both, list(&client.ListNodeEdgesParams{Dir: ptr(client.EdgeDirectionBoth)}))
	require.ElementsMatch(t, []string{"hub relates_to o2", "hub relates_to o3", "hub relates_to o5", "in1 relates_to hub"},
		list(&client.ListNodeEdgesParams{Type: ptr("relates_to")}))
	require.ElementsMatch(t, []string{"in2 depends_on hub"}, list(&client.ListNodeEdgesParams{Type: ptr("depends_on"), Dir: ptr(client.EdgeDirectionIn)}))
	require.Empty(t, list(&client.ListNodeEdgesParams{Type: ptr("blocks")}))

	// Paging: 7 edges, 3 at a time.
	var paged []string
	var cursor *string
	pages := 0
	for {
		res, err := d.ListNodeEdgesWithResponse(ctx, "hub", &client.ListNodeEdgesParams{Limit: ptr(3), Cursor: cursor})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		pages++
		paged = append(paged, edgeKeys(res.JSON200.Items)...)
		if res.JSON200.NextCursor == nil {
			require.Len(t, res.JSON200.Items, 1, "the last page")
			break
		}
		require.Len(t, res.JSON200.Items, 3)
		cursor = res.JSON200.NextCursor
		require.Less(t, pages, 5, "paging ends")
	}
	require.Equal(t, 3, pages)
	require.Equal(t, both, paged, "pages walk the unpaged order without gaps or repeats")

	// Retired edges show only when asked for, with retired_at.
	for _, p := range []client.DeleteEdgeParams{{From: "hub", Type: "relates_to", To: "o3"}, {From: "in1", Type: "relates_to", To: "hub"}} {
		res, err := d.DeleteEdgeWithResponse(ctx, &p)
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, res.StatusCode(), string(res.Body))
	}
	require.Len(t, list(nil), 5)
	res, err := d.ListNodeEdgesWithResponse(ctx, "hub", &client.ListNodeEdgesParams{IncludeRetired: ptr(true)})
	require.NoError(t, err)
	require.Len(t, res.JSON200.Items, 7)
	retired := 0
	for _, edge := range res.JSON200.Items {
		if edge.RetiredAt != nil {
			retired++
			require.Contains(t, []string{"hub relates_to o3", "in1 relates_to hub"}, edgeKeys([]client.Edge{edge})[0])
		}
	}
	require.Equal(t, 2, retired)
	retiredIn, err := d.ListNodeEdgesWithResponse(ctx, "hub", &client.ListNodeEdgesParams{IncludeRetired: ptr(true), Dir: ptr(client.EdgeDirectionIn), Type: ptr("relates_to")})
	require.NoError(t, err)
	require.Equal(t, []string{"in1 relates_to hub"}, edgeKeys(retiredIn.JSON200.Items))
	require.NotNil(t, retiredIn.JSON200.Items[0].RetiredAt)

	// Re-creating a retired edge gives a new live one beside the old history.
	e.mustEdge(d, "hub", "relates_to", "o3", nil)
	res, err = d.ListNodeEdgesWithResponse(ctx, "hub", &client.ListNodeEdgesParams{IncludeRetired: ptr(true), Type: ptr("relates_to"), Dir: ptr(client.EdgeDirectionOut)})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"hub relates_to o2", "hub relates_to o3", "hub relates_to o3", "hub relates_to o5"}, edgeKeys(res.JSON200.Items))

	// Paging with include_retired walks live and retired edges alike.
	unpaged, err := d.ListNodeEdgesWithResponse(ctx, "hub", &client.ListNodeEdgesParams{IncludeRetired: ptr(true)})
	require.NoError(t, err)
	require.Len(t, unpaged.JSON200.Items, 8)
	var all []string
	cursor = nil
	for range 10 {
		page, err := d.ListNodeEdgesWithResponse(ctx, "hub", &client.ListNodeEdgesParams{IncludeRetired: ptr(true), Limit: ptr(3), Cursor: cursor})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, page.StatusCode(), string(page.Body))
		all = append(all, edgeKeys(page.JSON200.Items)...)
		if cursor = page.JSON200.NextCursor; cursor == nil {
			break
		}
	}
	require.Equal(t, edgeKeys(unpaged.JSON200.Items), all)

	tok := e.token("acme", "viewer", "reader")
	for _, q := range []string{"dir=sideways", "type=Bad-Type", "include_retired=maybe", "limit=0", "limit=1001", "cursor=%25%25"} {
		resp, b := e.raw(http.MethodGet, "/v1/nodes/hub/edges?"+q, tok, "", "")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", q, b)
	}
	missing, err := d.ListNodeEdgesWithResponse(ctx, "nope", nil)
	require.NoError(t, err)
	requireProblem(t, missing.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
}

func TestReadinessFollowsDependenciesAndChildren(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	alice := e.user("alice")
	e.mustCreate(task("dep"))
	e.mustCreate(task("waits"))
	e.mustEdge(d, "waits", "depends_on", "dep", nil)

	get := func(id string) client.Node {
		t.Helper()
		res, err := d.GetNodeWithResponse(ctx, id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		return *res.JSON200
	}
	w := get("waits")
	require.False(t, w.Ready)
	require.Equal(t, []string{"dep"}, w.BlockedBy)
	notReady, err := d.ListNodesWithResponse(ctx, &client.ListNodesParams{Ready: ptr(false)})
	require.NoError(t, err)
	require.Equal(t, []string{"waits"}, nodeIDs(notReady.JSON200.Items))

	claim, err := alice.ClaimNodeWithResponse(ctx, "dep", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))
	require.Equal(t, []string{"dep"}, get("waits").BlockedBy, "running is not done")
	done, err := alice.CompleteNodeWithResponse(ctx, "dep", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
	w = get("waits")
	require.True(t, w.Ready)
	require.Empty(t, w.BlockedBy)
	require.Contains(t, string(mustGetBody(t, d, "waits")), `"blocked_by":[]`)

	// A parent waits for its unfinished children.
	e.mustCreate(task("parent"))
	e.mustCreate(client.NodeCreate{ID: ptr("c1"), Type: "task", Queue: ptr("default"), Parent: ptr("parent")})
	e.mustCreate(task("c2"))
	e.mustEdge(d, "parent", "parent_of", "c2", nil)
	p := get("parent")
	require.False(t, p.Ready)
	require.ElementsMatch(t, []string{"c1", "c2"}, p.BlockedBy)
	for _, id := range []string{"c1", "c2"} {
		require.True(t, get(id).Ready)
	}
	_, err = alice.ClaimNodeWithResponse(ctx, "c1", client.ClaimRequest{})
	require.NoError(t, err)
	_, err = alice.CompleteNodeWithResponse(ctx, "c1", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, []string{"c2"}, get("parent").BlockedBy)
	_, err = alice.ClaimNodeWithResponse(ctx, "c2", client.ClaimRequest{})
	require.NoError(t, err)
	_, err = alice.CompleteNodeWithResponse(ctx, "c2", client.CompleteRequest{})
	require.NoError(t, err)
	p = get("parent")
	require.True(t, p.Ready, "every child is terminal")
	require.Empty(t, p.BlockedBy)

	// Retiring a depends_on unblocks at once.
	e.mustCreate(task("gate"))
	e.mustCreate(task("held"))
	e.mustEdge(d, "held", "depends_on", "gate", nil)
	require.False(t, get("held").Ready)
	del, err := d.DeleteEdgeWithResponse(ctx, &client.DeleteEdgeParams{From: "held", Type: "depends_on", To: "gate"})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode())
	require.True(t, get("held").Ready)
}

func mustGetBody(t *testing.T, c *client.ClientWithResponses, id string) []byte {
	t.Helper()
	res, err := c.GetNodeWithResponse(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.Body
}

func TestSubgraphDepthAndTypes(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	// root ─parent_of→ a, b;  b ─depends_on→ c;  c ─relates_to→ far;
	// a is claimed by alice: a ─assigned→ identity:alice.
	e.mustCreate(task("root"))
	e.mustCreate(client.NodeCreate{ID: ptr("a"), Type: "task", Queue: ptr("default"), Parent: ptr("root")})
	e.mustCreate(client.NodeCreate{ID: ptr("b"), Type: "task", Queue: ptr("default"), Parent: ptr("root")})
	e.mustCreate(task("c"))
	e.mustCreate(task("far"))
	e.mustCreate(task("alone"))
	e.mustEdge(d, "b", "depends_on", "c", nil)
	e.mustEdge(d, "c", "relates_to", "far", nil)
	claim, err := e.user("alice").ClaimNodeWithResponse(ctx, "a", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))

	r := e.user("viewer", "reader")
	sub := func(id string, p *client.GetSubgraphParams) ([]string, []string) {
		t.Helper()
		res, err := r.GetSubgraphWithResponse(ctx, id, p)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Equal(t, id, res.JSON200.Nodes[0].ID, "the root comes first")
		return nodeIDs(res.JSON200.Nodes), edgeKeys(res.JSON200.Edges)
	}
	system := &[]string{"parent_of", "depends_on", "assigned"}

	nodes, edges := sub("root", &client.GetSubgraphParams{Depth: ptr(0)})
	require.Equal(t, []string{"root"}, nodes)
	require.Empty(t, edges)

	nodes, edges = sub("root", &client.GetSubgraphParams{Depth: ptr(1), Types: system})
	require.ElementsMatch(t, []string{"root", "a", "b"}, nodes)
	require.ElementsMatch(t, []string{"root parent_of a", "root parent_of b"}, edges)

	nodes, edges = sub("root", &client.GetSubgraphParams{Depth: ptr(2), Types: system})
	require.ElementsMatch(t, []string{"root", "a", "b", "c", "identity:alice"}, nodes)
	require.ElementsMatch(t, []string{"root parent_of a", "root parent_of b", "b depends_on c", "a assigned identity:alice"}, edges)

	nodes, edges = sub("root", &client.GetSubgraphParams{Depth: ptr(10), Types: &[]string{"parent_of"}})
	require.ElementsMatch(t, []string{"root", "a", "b"}, nodes)
	require.ElementsMatch(t, []string{"root parent_of a", "root parent_of b"}, edges)

	nodes, _ = sub("root", &client.GetSubgraphParams{Depth: ptr(10), Types: &[]string{"parent_of", "depends_on"}})
	require.ElementsMatch(t, []string{"root", "a", "b", "c"}, nodes)

	nodes, edges = sub("root", &client.GetSubgraphParams{Depth: ptr(10), Types: &[]string{"parent_of", "depends_on", "relates_to"}})
	require.ElementsMatch(t, []string{"root", "a", "b", "c", "far"}, nodes)
	require.Contains(t, edges, "c relates_to far")

	// Edges are walked both ways: from c, up to b and root.
	nodes, _ = sub("c", &client.GetSubgraphParams{Depth: ptr(2), Types: system})
	require.ElementsMatch(t, []string{"c", "b", "root"}, nodes)
	// And from the identity node to what it carries.
	nodes, _ = sub("identity:alice", &client.GetSubgraphParams{Depth: ptr(1)})
	require.ElementsMatch(t, []string{"identity:alice", "a"}, nodes)

	nodes, edges = sub("alone", nil)
	require.Equal(t, []string{"alone"}, nodes)
	require.Empty(t, edges)

	// The default depth is 3: root → b → c is reached, with the system types.
	nodes, _ = sub("root", &client.GetSubgraphParams{Types: system})
	require.ElementsMatch(t, []string{"root", "a", "b", "c", "identity:alice"}, nodes)

	for _, depth := range []int{11, -1} {
		bad, err := r.GetSubgraphWithResponse(ctx, "root", &client.GetSubgraphParams{Depth: ptr(depth)})
		require.NoError(t, err)
		requireProblem(t, bad.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
		require.Equal(t, "depth", bad.ApplicationProblemJSON400.Field)
	}
	badType, err := r.GetSubgraphWithResponse(ctx, "root", &client.GetSubgraphParams{Types: &[]string{"Bad-Type"}})
	require.NoError(t, err)
	requireProblem(t, badType.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	missing, err := r.GetSubgraphWithResponse(ctx, "nope", nil)
	require.NoError(t, err)
	requireProblem(t, missing.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
}

// TestSubgraphFollowsAllTypesByDefault pins openapi.yaml's "Edge types to
// follow, comma separated (default all)".
func TestSubgraphFollowsAllTypesByDefault(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	e.mustCreate(task("root"))
	e.mustCreate(client.NodeCreate{ID: ptr("kid"), Type: "task", Parent: ptr("root")})
	e.mustCreate(task("friend"))
	e.mustEdge(d, "root", "relates_to", "friend", nil)

	res, err := d.GetSubgraphWithResponse(ctx, "root", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.ElementsMatch(t, []string{"root parent_of kid", "root relates_to friend"}, edgeKeys(res.JSON200.Edges))
	require.ElementsMatch(t, []string{"root", "kid", "friend"}, nodeIDs(res.JSON200.Nodes))
}

func TestCancelCascades(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	alice, bob := e.user("alice"), e.user("bob")

	// epic ─parent_of→ running (held by alice), queued, finished (done) ;
	// queued ─parent_of→ grandkid ;
	// follows ─depends_on(cancel)→ epic ; tolerant ─depends_on(ignore)→ epic ;
	// chained ─depends_on(cancel)→ follows ; unrelated stays alone.
	e.mustCreate(task("epic"))
	for _, id := range []string{"running", "queued", "finished"} {
		e.mustCreate(client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("default"), Parent: ptr("epic")})
	}
	e.mustCreate(client.NodeCreate{ID: ptr("grandkid"), Type: "task", Queue: ptr("default"), Parent: ptr("queued")})
	e.mustCreate(client.NodeCreate{ID: ptr("follows"), Type: "task", Queue: ptr("default"), DependsOn: &[]string{"epic"}})
	e.mustCreate(task("tolerant"))
	e.mustEdge(d, "tolerant", "depends_on", "epic", map[string]any{"on_fail": "ignore"})
	e.mustCreate(task("chained"))
	e.mustEdge(d, "chained", "depends_on", "follows", nil)
	e.mustCreate(task("unrelated"))

	_, err := bob.ClaimNodeWithResponse(ctx, "finished", client.ClaimRequest{})
	require.NoError(t, err)
	fin, err := bob.CompleteNodeWithResponse(ctx, "finished", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, fin.StatusCode(), string(fin.Body))
	claim, err := alice.ClaimNodeWithResponse(ctx, "running", client.ClaimRequest{Session: ptr("run-1")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))
	fence := claim.JSON200.Lease.Fence

	denied, err := alice.CancelNodeWithResponse(ctx, "epic", client.CancelRequest{})
	require.NoError(t, err)
	requireProblem(t, denied.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	missing, err := d.CancelNodeWithResponse(ctx, "nope", client.CancelRequest{})
	require.NoError(t, err)
	requireProblem(t, missing.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)

	res, err := d.CancelNodeWithResponse(ctx, "epic", client.CancelRequest{Reason: ptr("scope cut")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.True(t, res.JSON200.Ok)
	cancelled := []string{"epic", "running", "queued", "grandkid", "follows", "chained"}
	require.ElementsMatch(t, cancelled, res.JSON200.Cancelled)
	require.Equal(t, "epic", res.JSON200.Cancelled[0], "the root first")

	list, err := d.ListNodesWithResponse(ctx, nil)
	require.NoError(t, err)
	status := map[string]client.NodeStatus{}
	for _, n := range list.JSON200.Items {
		status[n.ID] = n.Status
		if slices.Contains(cancelled, n.ID) {
			require.Nil(t, n.Lease, "%s: a cancelled node holds no lease", n.ID)
		}
	}
	for _, id := range cancelled {
		require.Equal(t, client.NodeStatusCancelled, status[id], id)
	}
	require.Equal(t, client.NodeStatusDone, status["finished"], "a terminal child stays as it was")
	require.Equal(t, client.NodeStatusQueued, status["tolerant"], "on_fail ignore is not cancelled")
	require.Equal(t, client.NodeStatusQueued, status["unrelated"])
	tolerant, err := d.GetNodeWithResponse(ctx, "tolerant")
	require.NoError(t, err)
	require.True(t, tolerant.JSON200.Ready, "an ended on_fail ignore dependency does not block")

	// The running child's holder has lost its lease.
	lost, err := alice.RenewLeaseWithResponse(ctx, "running", client.RenewRequest{Fence: ptr(fence)})
	require.NoError(t, err)
	requireProblem(t, lost.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	late, err := alice.CompleteNodeWithResponse(ctx, "running", client.CompleteRequest{Fence: ptr(fence)})
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, late.StatusCode(), "a late completion is refused: %s", late.Body)
	leases, err := d.ListLeasesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, leases.JSON200.Items)
	hist, err := d.ListNodeEdgesWithResponse(ctx, "running", &client.ListNodeEdgesParams{Type: ptr("assigned"), IncludeRetired: ptr(true)})
	require.NoError(t, err)
	require.Len(t, hist.JSON200.Items, 1)
	require.Equal(t, "cancelled", hist.JSON200.Items[0].Props["outcome"])
	require.NotNil(t, hist.JSON200.Items[0].RetiredAt)

	// Cancelling again cancels nothing more.
	again, err := d.CancelNodeWithResponse(ctx, "epic", client.CancelRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, again.StatusCode(), string(again.Body))
	require.Empty(t, again.JSON200.Cancelled)
	require.Contains(t, string(again.Body), `"cancelled":[]`)
	reclaim, err := alice.ClaimNodeWithResponse(ctx, "queued", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, reclaim.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeNotClaimable)
	require.Equal(t, "terminal", reclaim.ApplicationProblemJSON409.Reason)
}

func TestCancelALeafCancelsOnlyItAndItsDependents(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	// on_child_fail ignore: what a cancelled child does to a parent that
	// fails with it is the lifecycle's business (the lifecycle rules in openapi.yaml), not the cascade's.
	e.mustCreate(client.NodeCreate{ID: ptr("parent"), Type: "task", Queue: ptr("default"), OnChildFail: ptr(client.OnChildFailIgnore)})
	e.mustCreate(client.NodeCreate{ID: ptr("leaf"), Type: "task", Queue: ptr("default"), Parent: ptr("parent")})
	e.mustCreate(client.NodeCreate{ID: ptr("sibling"), Type: "task", Queue: ptr("default"), Parent: ptr("parent")})
	var chain []string
	prev := "leaf"
	for i := range 3 {
		id := fmt.Sprintf("after-%d", i)
		e.mustCreate(client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("default"), DependsOn: &[]string{prev}})
		chain = append(chain, id)
		prev = id
	}
	res, err := d.CancelNodeWithResponse(ctx, "leaf", client.CancelRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Equal(t, append([]string{"leaf"}, chain...), res.JSON200.Cancelled, "breadth first along the dependents")
	p, err := d.GetNodeWithResponse(ctx, "parent")
	require.NoError(t, err)
	require.Equal(t, client.NodeStatusQueued, p.JSON200.Status, "a cancel never climbs to the parent")
	require.Equal(t, []string{"sibling"}, p.JSON200.BlockedBy, "a cancelled child no longer blocks it")
	s, err := d.GetNodeWithResponse(ctx, "sibling")
	require.NoError(t, err)
	require.Equal(t, client.NodeStatusQueued, s.JSON200.Status, "nor sideways to a sibling")
}
