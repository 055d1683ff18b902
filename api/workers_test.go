package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/server"
)

// heartbeat posts a heartbeat and returns the record (without the answer's
// inbox_unread); it must be a 200.
func heartbeat(t *testing.T, c *client.ClientWithResponses, hb client.WorkerHeartbeat) client.Worker {
	t.Helper()
	res, err := c.HeartbeatWorkerWithResponse(context.Background(), hb)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	r := res.JSON200
	return client.Worker{
		By: r.By, Worker: r.Worker, Status: r.Status, State: r.State, Node: r.Node, Meta: r.Meta,
		StartedAt: r.StartedAt, LastSeenAt: r.LastSeenAt, Stale: r.Stale,
	}
}

// workers lists every worker the client's tenant has (one page of 1000).
func workers(t *testing.T, c *client.ClientWithResponses) []client.Worker {
	t.Helper()
	res, err := c.ListWorkersWithResponse(context.Background(), &client.ListWorkersParams{Limit: ptr(1000)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Nil(t, res.JSON200.NextCursor)
	return res.JSON200.Items
}

func findWorker(t *testing.T, list []client.Worker, by, name string) client.Worker {
	t.Helper()
	for _, w := range list {
		if w.By == by && w.Worker == name {
			return w
		}
	}
	require.Failf(t, "worker not listed", "%s/%s in %+v", by, name, list)
	return client.Worker{}
}

func staleAfter(d time.Duration) option {
	return func(c *server.Config) { c.WorkerStaleAfter = d }
}

func TestWorkerHeartbeatRecordsWhoAndWhat(t *testing.T) {
	t.Parallel()
	e := start(t)
	w := e.user("alice", "worker")
	t0 := e.clk.Now()

	got := heartbeat(t, w, client.WorkerHeartbeat{Worker: "slot-1", Status: client.WorkerStatusIdle})
	require.Equal(t, "alice", got.By, "by is the token's subject")
	require.Equal(t, "slot-1", got.Worker)
	require.Equal(t, client.WorkerStatusIdle, got.Status)
	require.Nil(t, got.Node)
	require.Empty(t, got.Meta)
	require.True(t, got.StartedAt.Equal(t0), "started_at %v, clock %v", got.StartedAt, t0)
	require.True(t, got.LastSeenAt.Equal(t0))
	require.False(t, got.Stale)

	e.clk.Advance(10 * time.Second)
	got = heartbeat(t, w, client.WorkerHeartbeat{Worker: "slot-1", Status: client.WorkerStatusWorking, Node: ptr("task-1"),
		Meta: &map[string]any{"host": "box-7", "pid": 4242}})
	require.Equal(t, client.WorkerStatusWorking, got.Status)
	require.Equal(t, "task-1", *got.Node)
	require.Equal(t, map[string]any{"host": "box-7", "pid": float64(4242)}, got.Meta)
	require.True(t, got.StartedAt.Equal(t0), "started_at is the first heartbeat")
	require.True(t, got.LastSeenAt.Equal(t0.Add(10*time.Second)))

	// A reader sees it, exactly as the heartbeat answered.
	listed := findWorker(t, workers(t, e.user("auditor", "reader")), "alice", "slot-1")
	require.Equal(t, got, listed)

	// Back to idle: the node goes, the meta stays.
	e.clk.Advance(time.Second)
	got = heartbeat(t, w, client.WorkerHeartbeat{Worker: "slot-1", Status: client.WorkerStatusIdle})
	require.Nil(t, got.Node)
	require.Equal(t, "box-7", got.Meta["host"])
	require.True(t, got.StartedAt.Equal(t0))
}

func TestWorkerStaleAfterTheWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  []option
		stale time.Duration
	}{
		{"default 90s", nil, 90 * time.Second},
		{"TETHER_WORKER_STALE_MS 5000", []option{staleAfter(5 * time.Second)}, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := start(t, tc.opts...)
			w, r := e.user("alice", "worker"), e.user("auditor", "reader")
			heartbeat(t, w, client.WorkerHeartbeat{Worker: "a", Status: client.WorkerStatusWorking, Node: ptr("n1")})
			heartbeat(t, w, client.WorkerHeartbeat{Worker: "b", Status: client.WorkerStatusIdle})

			e.clk.Advance(tc.stale - time.Millisecond)
			require.False(t, findWorker(t, workers(t, r), "alice", "a").Stale, "one millisecond before the window")
			heartbeat(t, w, client.WorkerHeartbeat{Worker: "b", Status: client.WorkerStatusIdle})

			e.clk.Advance(time.Millisecond)
			list := workers(t, r)
			a := findWorker(t, list, "alice", "a")
			require.True(t, a.Stale, "no heartbeat for the whole window")
			require.Equal(t, client.WorkerStatusWorking, a.Status, "staleness does not rewrite the status")
			require.Equal(t, "n1", *a.Node)
			require.False(t, findWorker(t, list, "alice", "b").Stale, "b's heartbeat keeps it fresh")

			// A heartbeat makes it fresh again, as a new life.
			got := heartbeat(t, w, client.WorkerHeartbeat{Worker: "a", Status: client.WorkerStatusIdle})
			require.False(t, got.Stale)
			require.True(t, got.StartedAt.Equal(e.clk.Now()), "a stale worker that comes back starts afresh")
		})
	}
}

func TestWorkerStartedAtResetsAfterOffline(t *testing.T) {
	t.Parallel()
	e := start(t)
	w := e.user("alice", "worker")
	t0 := e.clk.Now()
	heartbeat(t, w, client.WorkerHeartbeat{Worker: "slot-1", Status: client.WorkerStatusIdle})
	e.clk.Advance(time.Second)
	off := heartbeat(t, w, client.WorkerHeartbeat{Worker: "slot-1", Status: client.WorkerStatusOffline})
	require.Equal(t, client.WorkerStatusOffline, off.Status)
	require.True(t, off.StartedAt.Equal(t0), "going offline ends the life it started")
	require.False(t, off.Stale)

	e.clk.Advance(time.Second)
	back := heartbeat(t, w, client.WorkerHeartbeat{Worker: "slot-1", Status: client.WorkerStatusIdle})
	require.True(t, back.StartedAt.Equal(t0.Add(2*time.Second)), "back from offline: started_at %v", back.StartedAt)
	require.True(t, back.LastSeenAt.Equal(back.StartedAt))
}

func TestWorkerMetaKeptReplacedCleared(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("acme", "alice", "worker")
	w := e.as(tok)
	got := heartbeat(t, w, client.WorkerHeartbeat{Worker: "m", Status: client.WorkerStatusIdle, Meta: &map[string]any{"v": "1"}})
	require.Equal(t, map[string]any{"v": "1"}, got.Meta)

	got = heartbeat(t, w, client.WorkerHeartbeat{Worker: "m", Status: client.WorkerStatusIdle})
	require.Equal(t, map[string]any{"v": "1"}, got.Meta, "absent keeps")

	got = heartbeat(t, w, client.WorkerHeartbeat{Worker: "m", Status: client.WorkerStatusIdle, Meta: &map[string]any{"v": "2", "gpu": true}})
	require.Equal(t, map[string]any{"v": "2", "gpu": true}, got.Meta, "an object replaces")

	res, body := e.raw(http.MethodPost, "/v1/workers/heartbeat", tok, "application/json", `{"worker": "m", "status": "idle", "meta": null}`)
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	var cleared client.Worker
	require.NoError(t, json.Unmarshal(body, &cleared))
	require.NotNil(t, cleared.Meta, "meta is always an object")
	require.Empty(t, cleared.Meta, "null clears")
	require.Empty(t, findWorker(t, workers(t, w), "alice", "m").Meta)
}

func TestWorkerHeartbeatValidation(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("acme", "alice", "worker")
	for _, tc := range []struct{ name, body, field string }{
		{"no body", ``, ""},
		{"no worker", `{"status": "idle"}`, "worker"},
		{"empty worker", `{"worker": "", "status": "idle"}`, "worker"},
		{"worker with a slash", `{"worker": "a/b", "status": "idle"}`, "worker"},
		{"worker too long", fmt.Sprintf(`{"worker": "%0129d", "status": "idle"}`, 0), "worker"},
		{"no status", `{"worker": "w"}`, "status"},
		{"unknown status", `{"worker": "w", "status": "busy"}`, "status"},
		{"node while idle", `{"worker": "w", "status": "idle", "node": "n1"}`, "node"},
		{"node while offline", `{"worker": "w", "status": "offline", "node": "n1"}`, "node"},
		{"empty node", `{"worker": "w", "status": "working", "node": ""}`, "node"},
		{"bad node id", `{"worker": "w", "status": "working", "node": "a b"}`, "node"},
		{"meta not an object", `{"worker": "w", "status": "idle", "meta": [1]}`, "meta"},
		{"meta a string", `{"worker": "w", "status": "idle", "meta": "x"}`, "meta"},
		{"meta too large", fmt.Sprintf(`{"worker": "w", "status": "idle", "meta": {"x": "%0*d"}}`, 16<<10, 0), "meta"},
		{"unknown field", `{"worker": "w", "status": "idle", "by": "mallory"}`, "by"},
		{"status not a string", `{"worker": "w", "status": 1}`, "status"},
	} {
		res, body := e.raw(http.MethodPost, "/v1/workers/heartbeat", tok, "application/json", tc.body)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "%s: %s", tc.name, body)
		p := client.ProblemFrom(res, body)
		require.NotNil(t, p, tc.name)
		require.Equal(t, client.ProblemCodeBadRequest, p.Code, tc.name)
		require.Equal(t, tc.field, p.Field, "%s: %s", tc.name, body)
	}
	require.Empty(t, workers(t, e.as(tok)), "a refused heartbeat records nothing")

	// Readers may list but not heartbeat; nobody without a token may do either.
	res, err := e.user("auditor", "reader").HeartbeatWorkerWithResponse(context.Background(), client.WorkerHeartbeat{Worker: "w", Status: client.WorkerStatusIdle})
	require.NoError(t, err)
	requireProblem(t, res.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	list, err := e.as("").ListWorkersWithResponse(context.Background(), nil)
	require.NoError(t, err)
	requireProblem(t, list.ApplicationProblemJSON401, http.StatusUnauthorized, client.ProblemCodeUnauthorized)
	list, err = e.as(tok).ListWorkersWithResponse(context.Background(), &client.ListWorkersParams{Cursor: ptr("not-a-cursor")})
	require.NoError(t, err)
	requireProblem(t, list.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
}

func TestWorkersAreConfinedToTenantAndIdentity(t *testing.T) {
	t.Parallel()
	e := start(t)
	alice, bob := e.user("alice", "worker"), e.user("bob", "worker")
	other := e.as(e.token("globex", "alice", "worker"))
	heartbeat(t, alice, client.WorkerHeartbeat{Worker: "slot-1", Status: client.WorkerStatusWorking, Node: ptr("a-task")})
	heartbeat(t, bob, client.WorkerHeartbeat{Worker: "slot-1", Status: client.WorkerStatusIdle})
	heartbeat(t, other, client.WorkerHeartbeat{Worker: "slot-1", Status: client.WorkerStatusOffline})

	acme := workers(t, e.user("auditor", "reader"))
	require.Len(t, acme, 2, "the same worker name under two identities is two workers")
	require.Equal(t, client.WorkerStatusWorking, findWorker(t, acme, "alice", "slot-1").Status,
		"bob's heartbeat does not touch alice's slot-1")
	require.Equal(t, client.WorkerStatusIdle, findWorker(t, acme, "bob", "slot-1").Status)

	globex := workers(t, other)
	require.Len(t, globex, 1, "another tenant sees only its own")
	require.Equal(t, client.WorkerStatusOffline, globex[0].Status)
	require.Equal(t, "alice", globex[0].By)
}

func TestWorkersPage(t *testing.T) {
	t.Parallel()
	e := start(t)
	for _, sub := range []string{"alice", "bob"} {
		w := e.user(sub, "worker")
		for i := range 3 {
			heartbeat(t, w, client.WorkerHeartbeat{Worker: fmt.Sprintf("slot-%d", i), Status: client.WorkerStatusIdle})
		}
	}
	r := e.user("auditor", "reader")
	var seen []string
	var cursor *string
	for range 10 {
		res, err := r.ListWorkersWithResponse(context.Background(), &client.ListWorkersParams{Limit: ptr(4), Cursor: cursor})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		for _, w := range res.JSON200.Items {
			seen = append(seen, w.By+"/"+w.Worker)
		}
		if cursor = res.JSON200.NextCursor; cursor == nil {
			break
		}
	}
	require.Equal(t, []string{"alice/slot-0", "alice/slot-1", "alice/slot-2", "bob/slot-0", "bob/slot-1", "bob/slot-2"}, seen)
}

// TestWorkerStateOneVocabulary: the API's state is what every face shows; a
// worker that said offline stays offline (never stale) and is forgotten
// TETHER_WORKER_OFFLINE_RETENTION_MS after its goodbye, while a silent one
// is stale and stays listed.
func TestWorkerStateOneVocabulary(t *testing.T) {
	t.Parallel()
	e := start(t, staleAfter(5*time.Second), func(c *server.Config) { c.WorkerOfflineRetention = time.Minute })
	w := e.user("alice", "worker")
	require.Equal(t, client.WorkerStateIdle, heartbeat(t, w, client.WorkerHeartbeat{Worker: "idle", Status: client.WorkerStatusIdle}).State)
	require.Equal(t, client.WorkerStateWorking, heartbeat(t, w, client.WorkerHeartbeat{Worker: "crashed", Status: client.WorkerStatusWorking, Node: ptr("n1")}).State)
	heartbeat(t, w, client.WorkerHeartbeat{Worker: "stopped", Status: client.WorkerStatusIdle})
	off := heartbeat(t, w, client.WorkerHeartbeat{Worker: "stopped", Status: client.WorkerStatusOffline})
	require.Equal(t, client.WorkerStateOffline, off.State)

	e.clk.Advance(10 * time.Second)
	heartbeat(t, w, client.WorkerHeartbeat{Worker: "idle", Status: client.WorkerStatusIdle})
	list := workers(t, w)
	stopped := findWorker(t, list, "alice", "stopped")
	require.Equal(t, client.WorkerStateOffline, stopped.State, "a runner that stopped cleanly is offline, not stale")
	require.False(t, stopped.Stale)
	crashed := findWorker(t, list, "alice", "crashed")
	require.Equal(t, client.WorkerStateStale, crashed.State)
	require.True(t, crashed.Stale)
	require.Equal(t, client.WorkerStateIdle, findWorker(t, list, "alice", "idle").State)

	e.clk.Advance(50 * time.Second)
	names := func() []string {
		var out []string
		for _, w := range workers(t, w) {
			out = append(out, w.Worker)
		}
		return out
	}
	require.ElementsMatch(t, []string{"crashed", "idle"}, names(), "forgotten a minute after its goodbye")
}
