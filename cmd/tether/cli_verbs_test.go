package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tether-run/tether/client"
)

// lines is s split into its non-empty lines.
func lines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestCLICancelRequeueComment: the node verbs by id, as the API answers them.
func TestCLICancelRequeueComment(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	e.ok(e.head, "nodes", "create", "--id", "parent", "--type", "task", "--queue", "q")
	e.ok(e.head, "nodes", "create", "--id", "child", "--type", "task", "--queue", "q", "--parent", "parent")

	// A worker may not cancel; the node is untouched.
	r := e.fails(1, e.alice, "cancel", "parent")
	requireContains(t, r.stderr, "403")
	requireContains(t, e.ok(e.head, "nodes", "get", "parent"), "status: queued")

	requireContains(t, e.ok(e.head, "cancel", "parent", "--reason", "superseded"), "parent cancelled with 1 more: child")
	e.ok(e.head, "nodes", "create", "--id", "p2", "--type", "task", "--queue", "q")
	e.ok(e.head, "nodes", "create", "--id", "c2", "--type", "task", "--queue", "q", "--parent", "p2")
	if got := strings.Join(lines(e.ok(e.head, "cancel", "p2", "-o", "id")), " "); got != "p2 c2" {
		t.Errorf("cancel -o id printed %q, want the ids cancelled", got)
	}
	requireContains(t, e.ok(e.head, "nodes", "get", "child"), "status: cancelled")
	ans := decode[client.NodeAnswer](t, e.ok(e.head, "requeue", "child", "-o", "json"))
	if ans.Status != client.NodeStatusQueued || ans.Node.ID != "child" {
		t.Fatalf("requeue -o json: %+v", ans)
	}
	// Requeueing a queued node is the API's 409, exit 1.
	r = e.fails(1, e.head, "requeue", "child")
	requireContains(t, r.stderr, "409")
	if got := strings.TrimSpace(e.ok(e.head, "requeue", "parent", "-o", "id")); got != "parent" {
		t.Errorf("requeue -o id printed %q", got)
	}

	requireContains(t, e.ok(e.alice, "comment", "child", "blocked on the staging database"), "on child by alice")
	requireContains(t, e.ok(e.bob, "comments", "child"), "ID BY WHEN BODY", "alice", "blocked on the staging database")
	e.fails(1, e.alice, "comment", "no-such-node", "x")
	e.fails(2, e.alice, "comment", "child") // no text
}

// TestCLIBulkCancelAndRequeue: the bulk forms select with the filters of
// nodes ls (one POST /v1/nodes/bulk), say how many they will touch, change
// nothing without --yes, and report a count and every refusal.
func TestCLIBulkCancelAndRequeue(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	api := e.srv.as(httpClient(t), e.head)
	var specs []client.NodeCreate
	for i := range 7 {
		q := "bulk"
		if i >= 5 {
			q = "other"
		}
		specs = append(specs, client.NodeCreate{ID: ptr(fmt.Sprintf("b%d", i)), Type: "task", Queue: &q})
	}
	res, err := api.CreateNodesBatchWithResponse(context.Background(), nil, client.NodeBatchCreate{Items: specs})
	if err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("batch create: %v %s", err, res.Body)
	}
	queued := func(q string) []string {
		return lines(e.ok(e.head, "nodes", "ls", "--queue", q, "--status", "queued", "-o", "id"))
	}

	// Without --yes (stdin is not a terminal): the count, and nothing changes.
	r := e.fails(2, e.head, "cancel", "--queue", "bulk")
	requireContains(t, r.stderr, "would cancel 5 nodes (queue=bulk); add --yes")
	if got := queued("bulk"); len(got) != 5 {
		t.Fatalf("after a refused bulk cancel, queued: %v", got)
	}
	// Ids and filters together, or neither: usage errors.
	e.fails(2, e.head, "cancel", "b0", "--queue", "bulk", "--yes")
	e.fails(2, e.head, "requeue")
	r = e.fails(2, e.head, "cancel", "--queue", "bulk", "--limit", "2")
	requireContains(t, r.stderr, "would cancel 2 nodes (queue=bulk), the first --limit 2 of more; add --yes")
	e.fails(2, e.head, "cancel", "b0", "--yes") // --yes goes with filters
	// A worker may not: the API's 403, and nothing changes.
	r = e.fails(1, e.alice, "cancel", "--queue", "bulk", "--yes")
	requireContains(t, r.stderr, "403")

	requireContains(t, e.ok(e.head, "cancel", "--queue", "bulk", "--status", "queued", "--yes"), "cancelled 5 of 5 nodes")
	if got := queued("bulk"); len(got) != 0 {
		t.Fatalf("still queued after the bulk cancel: %v", got)
	}
	if got := queued("other"); len(got) != 2 {
		t.Fatalf("the bulk cancel touched another queue: %v", got)
	}
	requireContains(t, e.ok(e.head, "cancel", "--queue", "bulk", "--status", "queued", "--yes"), "no node matches (status=queued, queue=bulk): nothing to cancel")

	// Requeueing queued nodes fails for each, with the API's reason.
	r = e.fails(1, e.head, "requeue", "--queue", "other", "--yes")
	requireContains(t, r.stdout, "requeued 0 of 2 nodes")
	requireContains(t, r.stderr, "b5: 409", "b6: 409")

	requireContains(t, e.ok(e.head, "requeue", "--status", "cancelled", "--yes"), "requeued 5 of 5 nodes")
	if got := queued("bulk"); strings.Join(got, " ") != "b0 b1 b2 b3 b4" {
		t.Fatalf("queued after the bulk requeue: %v", got)
	}

	// -o json is the API's answer; a cancel names what its cascade reached.
	e.ok(e.head, "nodes", "create", "--id", "kid", "--type", "task", "--queue", "kids", "--parent", "b0")
	out := e.ok(e.head, "cancel", "--search", "b0", "--yes")
	requireContains(t, out, "cancelled 1 of 1 node, and 1 more that hang on them")
	got := decode[client.BulkResult](t, e.ok(e.head, "requeue", "--status", "cancelled", "-o", "json", "--yes"))
	if got.Matched != 2 || len(got.Affected) != 2 || len(got.Failed) != 0 {
		t.Fatalf("requeue -o json: %+v", got)
	}

	// nodes rm in bulk, and -o id: the ids deleted.
	if ids := strings.Join(lines(e.ok(e.head, "nodes", "rm", "--queue", "other", "--yes", "-o", "id")), " "); ids != "b5 b6" {
		t.Fatalf("nodes rm --queue other -o id printed %q", ids)
	}
	if got := e.ok(e.head, "nodes", "ls", "--queue", "other", "-o", "id"); got != "" {
		t.Fatalf("left in queue other: %q", got)
	}
}

// TestCLIWorkersAndListIDs: -o id on a list prints one id per line (a
// worker's name for tether workers).
func TestCLIWorkersAndListIDs(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	ctx := context.Background()
	alice := e.srv.as(httpClient(t), e.alice)
	e.ok(e.head, "nodes", "create", "--id", "w1", "--type", "task", "--queue", "q")
	e.ok(e.head, "nodes", "create", "--id", "w2", "--type", "task", "--queue", "q")
	e.ok(e.alice, "claim", "w1")
	node := "w1"
	for _, hb := range []client.WorkerHeartbeat{
		{Worker: "host-1", Status: client.WorkerStatusWorking, Node: &node},
		{Worker: "host-2", Status: client.WorkerStatusIdle},
	} {
		res, err := alice.HeartbeatWorkerWithResponse(ctx, hb)
		if err != nil || res.StatusCode() >= 300 {
			t.Fatalf("heartbeat: %v %s", err, res.Body)
		}
	}
	out := e.ok(e.bob, "workers")
	requireContains(t, out, "BY WORKER STATE NODE LAST_SEEN")
	if f := row(t, out, "alice"); f[1] != "host-1" || f[2] != "working" || f[3] != "w1" {
		t.Errorf("host-1 row: %v", f)
	}
	requireContains(t, out, "alice host-2 idle -")
	if got := strings.Join(lines(e.ok(e.bob, "workers", "-o", "id")), " "); got != "host-1 host-2" {
		t.Errorf("workers -o id: %q", got)
	}
	if got := strings.Join(lines(e.ok(e.bob, "nodes", "ls", "--queue", "q", "-o", "id")), " "); got != "w1 w2" {
		t.Errorf("nodes ls -o id: %q", got)
	}
	if got := strings.Join(lines(e.ok(e.bob, "leases", "-o", "id")), " "); got != "w1" {
		t.Errorf("leases -o id: %q", got)
	}
	// An empty list prints nothing, and succeeds.
	if got := e.ok(e.bob, "nodes", "ls", "--queue", "none", "-o", "id"); got != "" {
		t.Errorf("an empty list -o id printed %q", got)
	}
}

// TestCLICommandLineHelp: a near miss gets a suggestion, and commands that
// call no server neither list nor take the client flags.
func TestCLICommandLineHelp(t *testing.T) {
	t.Parallel()
	e := &cliEnv{t: t, srv: &proc{}}
	for _, args := range [][]string{{"nodes", "creat"}, {"nodez"}, {"schedule", "paus"}} {
		r := e.fails(2, "", args...)
		requireContains(t, r.stderr, "unknown command", "Did you mean this?")
	}
	requireContains(t, e.fails(2, "", "nodes", "creat").stderr, "create")

	for _, cmd := range []string{"serve", "check", "restore", "health"} {
		help := e.ok("", cmd, "--help")
		for _, flag := range []string{"--server", "--token", "--output"} {
			if strings.Contains(help, flag) {
				t.Errorf("%s --help lists the client flag %s:\n%s", cmd, flag, help)
			}
		}
	}
	help := e.ok("", "work", "--help")
	requireContains(t, help, "--server", "--token") // work's own
	if strings.Contains(help, "--output") {
		t.Errorf("work --help lists --output:\n%s", help)
	}
	requireContains(t, e.ok("", "nodes", "ls", "--help"), "--server", "--token", "--output")
	r := e.fails(2, "", "serve", "--token", "x")
	requireContains(t, r.stderr, "--token is a flag of the client commands")
}
