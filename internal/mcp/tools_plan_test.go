package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/api"
	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/mcp"
)

// Every tool says what it does to the graph, and none reaches beyond it.
func TestToolAnnotations(t *testing.T) {
	t.Parallel()
	e := start(t)
	cs := e.streamable(e.token("agent-a"))
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	type hint struct{ readOnly, destructive, idempotent bool }
	want := map[string]hint{
		"claim_next": {}, "renew": {idempotent: true}, "progress": {},
		"complete": {destructive: true}, "fail": {destructive: true}, "release": {},
		"comment": {}, "create_node": {}, "create_child": {}, "send_message": {},
		"inbox":    {idempotent: true},
		"wait_for": {readOnly: true, idempotent: true}, "get_node": {readOnly: true, idempotent: true},
		"list_nodes": {readOnly: true, idempotent: true}, "list_queues": {readOnly: true, idempotent: true},
		"history": {readOnly: true, idempotent: true}, "list_limits": {readOnly: true, idempotent: true},
	}
	require.Len(t, tools.Tools, len(want))
	for _, tool := range tools.Tools {
		w, known := want[tool.Name]
		require.True(t, known, tool.Name)
		a := tool.Annotations
		require.NotNil(t, a, tool.Name)
		require.NotEmpty(t, a.Title, tool.Name)
		require.Equal(t, w.readOnly, a.ReadOnlyHint, tool.Name)
		require.NotNil(t, a.DestructiveHint, tool.Name)
		require.Equal(t, w.destructive, *a.DestructiveHint, tool.Name)
		require.Equal(t, w.idempotent, a.IdempotentHint, tool.Name)
		require.NotNil(t, a.OpenWorldHint, tool.Name)
		require.False(t, *a.OpenWorldHint, tool.Name)
		require.NotNil(t, tool.OutputSchema, "%s has an output schema", tool.Name)
	}
}

// checker validates answers against the output schemas the server lists
// (the Go SDK's client does not; the TypeScript SDK's does).
type checker map[string]*jsonschema.Resolved

func outputSchemas(t *testing.T, cs *sdk.ClientSession) checker {
	t.Helper()
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	c := checker{}
	for _, tool := range tools.Tools {
		b, err := json.Marshal(tool.OutputSchema)
		require.NoError(t, err)
		var sc jsonschema.Schema
		require.NoError(t, json.Unmarshal(b, &sc))
		r, err := sc.Resolve(nil)
		require.NoError(t, err, tool.Name)
		c[tool.Name] = r
	}
	return c
}

// call calls a tool and checks its structured answer against the tool's
// output schema, and that its text is the same answer.
func (c checker) call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res := call(t, cs, name, args)
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	require.NoError(t, c[name].Validate(v), "%s answered %s", name, b)
	require.NotEmpty(t, res.Content, name)
	require.Less(t, len(b), 1500, "%s: a compact answer", name)
	return res
}

// Answers and tool errors alike match the tools' output schemas, and carry
// what the agent needs next.
func TestAnswersMatchTheirOutputSchemas(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.queued("o-1", "q")
	planner := e.stdio(e.token("planner", "dispatcher"), mcp.Options{})
	cs := e.stdio(e.token("agent-o"), mcp.Options{})
	c := outputSchemas(t, cs)

	claim := ok(t, c.call(t, cs, "claim_next", map[string]any{"queue": "q", "ttl_ms": 60000}))
	require.Equal(t, "o-1", claim["node"].(map[string]any)["id"])
	lease := claim["lease"].(map[string]any)
	require.NotZero(t, lease["fence"])
	require.NotEmpty(t, lease["expires_at"])
	require.Contains(t, claim["next"], "complete")
	ok(t, c.call(t, cs, "renew", map[string]any{"node_id": "o-1"}))
	ok(t, c.call(t, cs, "progress", map[string]any{"node_id": "o-1", "pct": 50, "message": "half", "usage": map[string]any{"tokens": 10}}))
	ok(t, c.call(t, cs, "comment", map[string]any{"node_id": "o-1", "body": "note"}))
	ok(t, c.call(t, cs, "create_child", map[string]any{"parent": "o-1", "type": "part"}))
	ok(t, c.call(t, cs, "send_message", map[string]any{"to": "agent-o", "body": "hi"}))
	ok(t, c.call(t, cs, "inbox", map[string]any{"unread": true}))
	ok(t, c.call(t, cs, "history", map[string]any{"node_id": "o-1"}))
	ok(t, c.call(t, cs, "get_node", map[string]any{"node_id": "o-1"}))
	ok(t, c.call(t, cs, "list_nodes", map[string]any{"queue": "q"}))
	ok(t, c.call(t, cs, "list_queues", map[string]any{}))
	done := ok(t, c.call(t, cs, "complete", map[string]any{"node_id": "o-1", "result": map[string]any{"answer": 42}}))
	require.Equal(t, false, done["already_done"])
	ok(t, c.call(t, cs, "wait_for", map[string]any{"node_id": "o-1"}))
	ok(t, c.call(t, planner, "create_node", map[string]any{"type": "task", "queue": "q", "id": "o-2"}))
	ok(t, c.call(t, cs, "claim_next", map[string]any{"queue": "q"}))
	ok(t, c.call(t, cs, "fail", map[string]any{"node_id": "o-2", "error": "no luck"}))
	ok(t, c.call(t, cs, "claim_next", map[string]any{"queue": "q"}))
	ok(t, c.call(t, cs, "release", map[string]any{"node_id": "o-2"}))
	empty := ok(t, c.call(t, cs, "claim_next", map[string]any{"queue": "empty"}))
	require.Equal(t, false, empty["claimed"])

	// Tool errors: from the API, from an argument refused here, from the
	// SDK's schema check. Each has its problem type.
	for _, bad := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"get_node", map[string]any{"node_id": "nope"}, "not_found"},
		{"create_node", map[string]any{"type": "task"}, "forbidden"},
		{"history", map[string]any{"node_id": ".."}, "bad_request"},
		{"claim_next", map[string]any{"queue": "q", "ttl_ms": "long"}, "bad_request"},
		{"wait_for", map[string]any{"node_id": "o-1", "max_wait_ms": 3600000}, "bad_request"},
	} {
		res := c.call(t, cs, bad.tool, bad.args)
		m := toolError(t, res, map[string]int{"not_found": 404, "forbidden": 403, "bad_request": 400}[bad.code], bad.code)
		require.Equal(t, "urn:tether:problem:"+bad.code, m["type"], "%s: %v", bad.tool, m)
	}
}

// A completion repeated on a done node changes nothing and says so.
func TestCompleteAgainSaysAlreadyDone(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.queued("c-1", "q")
	cs := e.stdio(e.token("agent-c"), mcp.Options{})
	claim := ok(t, call(t, cs, "claim_next", map[string]any{"queue": "q"}))
	fence := claim["lease"].(map[string]any)["fence"]
	first := ok(t, call(t, cs, "complete", map[string]any{"node_id": "c-1", "result": "r"}))
	require.Equal(t, false, first["already_done"])
	again := ok(t, call(t, cs, "complete", map[string]any{"node_id": "c-1", "fence": fence, "result": "r"}))
	require.Equal(t, true, again["already_done"], "%v", again)
	require.Equal(t, "done", again["status"])
	require.Contains(t, again["next"], "changed nothing")
}

// A queue with no nodes reads as an empty queue, not as an error.
func TestEmptyQueueResource(t *testing.T) {
	t.Parallel()
	e := start(t)
	cs := e.stdio(e.token("agent-e"), mcp.Options{})
	res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "tether://queues/nothing-here"})
	require.NoError(t, err)
	var q client.Queue
	require.NoError(t, json.Unmarshal([]byte(res.Contents[0].Text), &q))
	require.Equal(t, "nothing-here", q.Queue)
	require.Zero(t, q.Ready)
	require.Empty(t, q.Counts)
	_, err = cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "tether://queues/no%20such"})
	require.Error(t, err, "a name no queue may have is not found")
}

// A dispatcher plans with create_node, finds work with list_nodes and
// list_queues, and waits for the children to end with wait_for.
func TestPlannerCreatesListsAndWaits(t *testing.T) {
	t.Parallel()
	e := start(t)
	planner := e.stdio(e.token("planner", "dispatcher"), mcp.Options{})
	worker := e.stdio(e.token("worker-1"), mcp.Options{})

	// A worker may not create top-level nodes: the API's role check.
	toolError(t, call(t, worker, "create_node", map[string]any{"type": "task", "queue": "jobs"}), 403, "forbidden")

	plan := ok(t, call(t, planner, "create_node", map[string]any{"id": "plan", "type": "plan", "title": "the plan"}))
	require.Contains(t, plan["next"], "children", "a node without a queue is planned with children")
	for i := range 3 {
		child := ok(t, call(t, planner, "create_node", map[string]any{
			"id": fmt.Sprintf("step-%d", i), "type": "step", "queue": "jobs", "parent": "plan", "title": fmt.Sprintf("step %d", i),
		}))
		require.Equal(t, "queued", child["node"].(map[string]any)["status"])
		require.Contains(t, child["next"], "wait_for")
	}

	page := ok(t, call(t, planner, "list_nodes", map[string]any{"queue": "jobs", "limit": 2}))
	require.Len(t, page["nodes"], 2)
	require.NotEmpty(t, page["next_cursor"])
	rest := ok(t, call(t, planner, "list_nodes", map[string]any{"queue": "jobs", "limit": 2, "cursor": page["next_cursor"]}))
	require.Len(t, rest["nodes"], 1)
	require.Empty(t, rest["next_cursor"])
	found := ok(t, call(t, planner, "list_nodes", map[string]any{"q": "STEP 1", "status": "queued"}))
	require.Len(t, found["nodes"], 1)
	require.Equal(t, "step-1", found["nodes"].([]any)[0].(map[string]any)["id"])
	queues := ok(t, call(t, planner, "list_queues", map[string]any{}))
	require.Equal(t, "jobs", queues["queues"].([]any)[0].(map[string]any)["queue"])
	require.EqualValues(t, 3, queues["queues"].([]any)[0].(map[string]any)["ready"])
	require.Empty(t, queues["next_cursor"])

	// Queues come a page at a time, by name.
	ok(t, call(t, planner, "create_node", map[string]any{"type": "task", "queue": "later", "id": "elsewhere"}))
	first := ok(t, call(t, planner, "list_queues", map[string]any{"limit": 1}))
	require.Len(t, first["queues"], 1)
	require.Equal(t, "jobs", first["queues"].([]any)[0].(map[string]any)["queue"])
	require.NotEmpty(t, first["next_cursor"])
	require.Contains(t, first["next"], "next_cursor")
	second := ok(t, call(t, planner, "list_queues", map[string]any{"limit": 1, "cursor": first["next_cursor"]}))
	require.Equal(t, "later", second["queues"].([]any)[0].(map[string]any)["queue"])
	require.Empty(t, second["next_cursor"])

	// Not yet ended: a short wait times out with the statuses so far.
	early := ok(t, call(t, planner, "wait_for", map[string]any{"node_id": "plan", "children": true, "max_wait_ms": 20}))
	require.Equal(t, true, early["timed_out"])
	require.Equal(t, false, early["ended"])
	require.EqualValues(t, 3, early["counts"].(map[string]any)["queued"])

	waited := make(chan *sdk.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := planner.CallTool(ctx, &sdk.CallToolParams{Name: "wait_for",
			Arguments: map[string]any{"node_id": "plan", "children": true, "max_wait_ms": 60000}})
		if err != nil {
			res = &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
		}
		waited <- res
	}()
	for i := range 3 {
		claim := ok(t, call(t, worker, "claim_next", map[string]any{"queue": "jobs"}))
		id := claim["node"].(map[string]any)["id"].(string)
		if i == 2 {
			ok(t, call(t, worker, "fail", map[string]any{"node_id": id, "error": "broken", "requeue": false}))
			continue
		}
		ok(t, call(t, worker, "complete", map[string]any{"node_id": id}))
	}
	res := <-waited
	all := ok(t, res)
	require.Equal(t, true, all["ended"], "%v", all)
	require.Equal(t, false, all["timed_out"])
	require.EqualValues(t, 2, all["counts"].(map[string]any)["done"])
	require.EqualValues(t, 1, all["counts"].(map[string]any)["failed"])
	require.Len(t, all["nodes"], 3)
}

// wait_for stops when its call is cancelled: its long poll ends, and the
// identity's wait it held is free again.
func TestWaitForStopsWithTheCall(t *testing.T) {
	t.Parallel()
	e := startWith(t, settings{waits: api.WaitLimits{PerIdentity: 1}})
	e.queued("w-1", "q")
	tok := e.token("agent-w")
	cs := e.stdio(tok, mcp.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The identity's one wait is taken while wait_for long polls.
	returned := e.waitForHolding(cs, ctx, tok, "w-1")
	cancel()
	require.Error(t, <-returned)
	require.Eventually(t, func() bool { return e.longPoll(tok) == http.StatusOK }, 10*time.Second, 10*time.Millisecond)
}

// wait_for stops when its HTTP session ends (DELETE, or idle): the wait it
// held is free again.
func TestWaitForStopsWithTheSession(t *testing.T) {
	t.Parallel()
	// The session and its standalone stream hold two of the identity's
	// three waits, wait_for's long poll the third.
	e := startWith(t, settings{waits: api.WaitLimits{PerIdentity: 3}})
	e.queued("w-2", "q")
	tok := e.token("agent-w")
	cs := e.streamable(tok)
	returned := e.waitForHolding(cs, context.Background(), tok, "w-2")
	status, _ := e.rawMCP(http.MethodDelete, tok, cs.ID(), "")
	require.Equal(t, http.StatusNoContent, status, "the DELETE does not wait for wait_for to end")
	<-returned
	// A new session and its stream take the places of the deleted one's;
	// the long poll finds the third free only once wait_for has stopped.
	e.streamable(tok)
	require.Eventually(t, func() bool { return e.longPoll(tok) == http.StatusOK }, 10*time.Second, 10*time.Millisecond)
}

// waitForHolding calls wait_for on id in the background and returns once
// its long poll holds the last of tok's waits: a probe (a 1 ms long poll)
// finds none free. The probe holds a wait itself while it runs, so when it
// is out just as wait_for's long poll starts, wait_for is refused (429) and
// returns; then it is called again.
func (e *env) waitForHolding(cs *sdk.ClientSession, ctx context.Context, tok, id string) <-chan error {
	e.t.Helper()
	var returned <-chan error
	require.Eventually(e.t, func() bool {
		if returned == nil {
			returned = waitForever(cs, ctx, id)
		}
		select {
		case <-returned:
			returned = nil // refused beside a probe: call it again
			return false
		default:
		}
		return e.longPoll(tok) == http.StatusTooManyRequests
	}, 10*time.Second, 10*time.Millisecond)
	return returned
}

// waitForever calls wait_for on id with the longest wait, in the background.
func waitForever(cs *sdk.ClientSession, ctx context.Context, id string) <-chan error {
	returned := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "wait_for", Arguments: map[string]any{"node_id": id, "max_wait_ms": 600000}})
		returned <- err
	}()
	return returned
}

// longPoll is the status of a 1 ms long poll of the event feed as tok.
func (e *env) longPoll(tok string) int {
	e.t.Helper()
	wait := 1
	res, err := e.as(tok).ListEventsWithResponse(context.Background(), &client.ListEventsParams{WaitMS: &wait})
	require.NoError(e.t, err)
	return res.StatusCode()
}

// create_node with a unique key a node holds makes nothing and names that
// node in duplicate_of.
func TestCreateNodeAnswersADuplicate(t *testing.T) {
	t.Parallel()
	e := start(t)
	planner := e.stdio(e.token("planner", "dispatcher"), mcp.Options{})
	args := map[string]any{"type": "task", "queue": "jobs", "unique": map[string]any{"key": "nightly:2026-01-02"}}
	first := ok(t, call(t, planner, "create_node", args))
	require.Nil(t, first["duplicate_of"])
	id := first["node"].(map[string]any)["id"]
	again := ok(t, call(t, planner, "create_node", args))
	require.Equal(t, id, again["duplicate_of"])
	require.Equal(t, id, again["node"].(map[string]any)["id"])
}
