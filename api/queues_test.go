package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// claimNext asks for the next node of queue with wait_ms waitMS and filters.
func claimNext(t *testing.T, c *client.ClientWithResponses, queue string, req client.ClaimNextRequest) *client.ClaimNextResponse {
	t.Helper()
	res, err := c.ClaimNextWithResponse(context.Background(), queue, req)
	require.NoError(t, err)
	return res
}

// mustClaimNext claims the next node of queue (wait_ms 0 unless req says
// otherwise) and returns the claim; it must be a fresh 200.
func mustClaimNext(t *testing.T, c *client.ClientWithResponses, queue string, req client.ClaimNextRequest) *client.ClaimResponse {
	t.Helper()
	if req.WaitMS == nil {
		req.WaitMS = ptr(int64(0))
	}
	res := claimNext(t, c, queue, req)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	cr := res.JSON200
	require.True(t, cr.Ok)
	require.False(t, cr.Renewed)
	require.Equal(t, client.NodeStatusRunning, cr.Status)
	require.Equal(t, client.NodeStatusRunning, cr.Node.Status)
	require.Equal(t, cr.Node.ID, cr.Lease.NodeID)
	require.NotNil(t, cr.Node.Lease)
	require.Equal(t, cr.Lease.By, cr.Node.Lease.By)
	require.Equal(t, "assigned", cr.Edge.Type)
	require.Equal(t, cr.Node.ID, cr.Edge.From)
	require.Equal(t, "identity:"+cr.Lease.By, cr.Edge.To)
	return cr
}

// requireNothing asserts that claim-next on queue answers 204 at once.
func requireNothing(t *testing.T, c *client.ClientWithResponses, queue string, req client.ClaimNextRequest) {
	t.Helper()
	req.WaitMS = ptr(int64(0))
	res := claimNext(t, c, queue, req)
	require.Equal(t, http.StatusNoContent, res.StatusCode(), "expected nothing to claim, got %s", res.Body)
	require.Empty(t, res.Body)
}

// polled is the answer of a long poll and when it arrived.
type polled struct {
	res *client.ClaimNextResponse
	err error
	at  time.Time
}

// parkedPoll is a claim-next long poll waiting on a queue of tenant acme.
type parkedPoll struct {
	answer <-chan polled
	queue  string
	woken  int64 // how many waits on the queue had ended when it parked
}

// wakeBound is how long a parked poll may take to answer once it is woken.
// What the tests check is that a wake answered it (the design has no
// polling interval, so nothing else could); this bound only catches a wake
// that then waits for something, and stays clear of a loaded machine's
// scheduling.
const wakeBound = 2 * time.Second

// startPoll starts a claim-next long poll in the background and returns
// once it is parked: it looked, found nothing and waits (the lifecycle's
// Parked signal), without having answered.
func startPoll(t *testing.T, e *env, c *client.ClientWithResponses, queue string) parkedPoll {
	t.Helper()
	parked := &e.srv.Nodes.TestSignals.Parked
	parked.Init(t)
	ch := make(chan polled, 1)
	go func() {
		res, err := c.ClaimNextWithResponse(context.Background(), queue, client.ClaimNextRequest{WaitMS: ptr(int64(60000))})
		ch <- polled{res: res, err: err, at: time.Now()}
	}()
	parked.WaitFor(t, func(q string) bool { return q == queue })
	select {
	case p := <-ch:
		if p.err != nil {
			t.Fatalf("long poll failed before anything changed: %v", p.err)
		}
		t.Fatalf("long poll answered %d before anything changed: %s", p.res.StatusCode(), p.res.Body)
	default:
	}
	_, woken := e.srv.Store.ReadyWaiters("acme", queue)
	return parkedPoll{answer: ch, queue: queue, woken: woken}
}

// awaitPoll waits for the long poll, requires that it claimed wantID
// because a change woke it, and returns how long after since it answered.
func awaitPoll(t *testing.T, e *env, p parkedPoll, since time.Time, wantID string) time.Duration {
	t.Helper()
	var got polled
	select {
	case got = <-p.answer:
	case <-time.After(10 * time.Second):
		t.Fatal("long poll never answered")
	}
	require.NoError(t, got.err)
	require.Equal(t, http.StatusOK, got.res.StatusCode(), string(got.res.Body))
	require.Equal(t, wantID, got.res.JSON200.Node.ID)
	_, woken := e.srv.Store.ReadyWaiters("acme", p.queue)
	require.Greater(t, woken, p.woken, "the change woke the poll")
	lat := got.at.Sub(since)
	require.Less(t, lat, wakeBound)
	return lat
}

func ids(items []client.ClaimedItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Node.ID
	}
	return out
}

func queueNamed(t *testing.T, list *client.QueueList, name string) client.Queue {
	t.Helper()
	for _, q := range list.Items {
		if q.Queue == name {
			return q
		}
	}
	t.Fatalf("queue %q is not listed", name)
	return client.Queue{}
}

func listQueues(t *testing.T, c *client.ClientWithResponses) *client.QueueList {
	t.Helper()
	res, err := c.ListQueuesWithResponse(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200
}

func TestQueueClaimOrderFiltersAndReadiness(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	mk := func(id string, priority int64, mod func(*client.NodeCreate)) {
		b := client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("q1"), Priority: ptr(priority)}
		if mod != nil {
			mod(&b)
		}
		e.mustCreate(b)
	}
	e.mustCreate(client.NodeCreate{ID: ptr("dep"), Type: "task", Queue: ptr("side")})
	mk("p0-old", 0, nil)
	mk("p1-old", 1, nil)
	e.mustCreate(client.NodeCreate{ID: ptr("elsewhere"), Type: "task", Queue: ptr("q2"), Priority: ptr(int64(100))})
	e.clk.Advance(time.Second)
	mk("p5", 5, nil)
	mk("for-bob", 10, func(b *client.NodeCreate) { b.Target = ptr("bob") })
	mk("blocked", 20, func(b *client.NodeCreate) { b.DependsOn = &[]string{"dep"} })
	mk("parent", 20, nil)
	e.mustCreate(client.NodeCreate{ID: ptr("child"), Type: "task", Queue: ptr("side"), Parent: ptr("parent")})
	delayed := e.mustCreate(client.NodeCreate{ID: ptr("delayed"), Type: "task", Queue: ptr("q1"), Priority: ptr(int64(20)), DelayMS: ptr(int64(60000))})
	require.NotNil(t, delayed.RunAt)
	e.clk.Advance(time.Second)
	// Same priority, same instant: the id decides (p1-a before p1-b).
	mk("p1-b", 1, nil)
	mk("p1-a", 1, nil)
	e.clk.Advance(time.Second)
	mk("p0-new", 0, nil)

	alice, bob := e.user("alice"), e.user("bob")
	var got []string
	for range 6 {
		cr := mustClaimNext(t, alice, "q1", client.ClaimNextRequest{})
		require.Equal(t, "alice", cr.Lease.By)
		got = append(got, cr.Node.ID)
	}
	require.Equal(t, []string{"p5", "p1-old", "p1-a", "p1-b", "p0-old", "p0-new"}, got,
		"priority high first, then oldest, then id; for-bob (target bob), blocked, parent and delayed skipped")
	requireNothing(t, alice, "q1", client.ClaimNextRequest{})

	forBob := mustClaimNext(t, bob, "q1", client.ClaimNextRequest{})
	require.Equal(t, "for-bob", forBob.Node.ID, "the node reserved for bob is his")
	requireNothing(t, bob, "q1", client.ClaimNextRequest{})

	other, err := bob.GetNodeWithResponse(ctx, "elsewhere")
	require.NoError(t, err)
	require.Equal(t, client.NodeStatusQueued, other.JSON200.Status, "a node of another queue never comes out of q1")
	require.True(t, other.JSON200.Ready)

	// The dependency completes: blocked becomes claimable.
	dep, err := alice.ClaimNodeWithResponse(ctx, "dep", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, dep.StatusCode(), string(dep.Body))
	requireNothing(t, alice, "q1", client.ClaimNextRequest{})
	done, err := alice.CompleteNodeWithResponse(ctx, "dep", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
	require.Equal(t, "blocked", mustClaimNext(t, alice, "q1", client.ClaimNextRequest{}).Node.ID)
	requireNothing(t, alice, "q1", client.ClaimNextRequest{})

	// The child completes: its parent becomes claimable.
	child, err := bob.ClaimNodeWithResponse(ctx, "child", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, child.StatusCode(), string(child.Body))
	done, err = bob.CompleteNodeWithResponse(ctx, "child", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
	require.Equal(t, "parent", mustClaimNext(t, alice, "q1", client.ClaimNextRequest{}).Node.ID)
	requireNothing(t, alice, "q1", client.ClaimNextRequest{})

	// run_at passes: the delayed node becomes claimable.
	e.clk.Advance(delayed.RunAt.Sub(e.clk.Now()) - time.Millisecond)
	requireNothing(t, alice, "q1", client.ClaimNextRequest{})
	e.clk.Advance(time.Millisecond)
	require.Equal(t, "delayed", mustClaimNext(t, alice, "q1", client.ClaimNextRequest{}).Node.ID)
	requireNothing(t, alice, "q1", client.ClaimNextRequest{})
	require.Equal(t, "elsewhere", mustClaimNext(t, alice, "q2", client.ClaimNextRequest{}).Node.ID)

	// Filters: types (any of) and labels (all of).
	for i, n := range []struct {
		id, typ string
		labels  []string
	}{
		{"f-build-xy", "build", []string{"x", "y"}},
		{"f-test-x", "test", []string{"x"}},
		{"f-build-y", "build", []string{"y"}},
		{"f-deploy-xyz", "deploy", []string{"x", "y", "z"}},
	} {
		e.mustCreate(client.NodeCreate{ID: ptr(n.id), Type: n.typ, Queue: ptr("f"), Labels: &n.labels, Priority: ptr(int64(4 - i))})
	}
	both := client.ClaimNextRequest{Types: &[]string{"build", "test"}, Labels: &[]string{"x", "y"}}
	require.Equal(t, "f-build-xy", mustClaimNext(t, alice, "f", both).Node.ID)
	requireNothing(t, alice, "f", both)
	require.Equal(t, "f-deploy-xyz", mustClaimNext(t, alice, "f", client.ClaimNextRequest{Labels: &[]string{"z"}}).Node.ID)
	builds := client.ClaimNextRequest{Types: &[]string{"build"}}
	require.Equal(t, "f-build-y", mustClaimNext(t, alice, "f", builds).Node.ID)
	requireNothing(t, alice, "f", builds)
	requireNothing(t, alice, "f", client.ClaimNextRequest{Labels: &[]string{"nope"}})
	require.Equal(t, "f-test-x", mustClaimNext(t, alice, "f", client.ClaimNextRequest{}).Node.ID)
	requireNothing(t, alice, "f", client.ClaimNextRequest{})
}

func TestQueueClaimEmptyAnswers204(t *testing.T) {
	t.Parallel()
	e := start(t)
	alice := e.user("alice")

	// The fastest of a few tries, so that a stall of a loaded machine (other
	// parallel tests fsync the same disk) does not pass for waiting.
	fastest := func(req client.ClaimNextRequest) time.Duration {
		best := time.Hour
		for range 3 {
			began := time.Now()
			res := claimNext(t, alice, "empty", req)
			require.Equal(t, http.StatusNoContent, res.StatusCode(), string(res.Body))
			require.Empty(t, res.Body)
			best = min(best, time.Since(began))
		}
		return best
	}
	instant := fastest(client.ClaimNextRequest{WaitMS: ptr(int64(0))})
	require.Less(t, instant, quickBound, "wait_ms 0 answers at once")
	require.Less(t, fastest(client.ClaimNextRequest{}), quickBound, "no wait_ms means no wait")

	began := time.Now()
	res := claimNext(t, alice, "empty", client.ClaimNextRequest{WaitMS: ptr(longWait.Milliseconds())})
	waited := time.Since(began)
	require.Equal(t, http.StatusNoContent, res.StatusCode(), string(res.Body))
	require.GreaterOrEqual(t, waited, quickBound, "a wait_ms waits")
	require.Less(t, waited, 3*time.Second)
	t.Logf("204 with wait_ms 0 after %v, with wait_ms %d after %v", instant, longWait.Milliseconds(), waited)

	tok := e.token("acme", "alice")
	for _, body := range []string{`{"wait_ms":60001}`, `{"wait_ms":-1}`, `{"wait_ms":"5"}`, `{"ttl_ms":0}`, `{"typo":1}`, `{"max":2}`} {
		resp, b := e.raw(http.MethodPost, "/v1/queues/empty/claim", tok, "application/json", body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", body, b)
	}
	reader, err := e.user("viewer", "reader").ClaimNextWithResponse(context.Background(), "empty", client.ClaimNextRequest{})
	require.NoError(t, err)
	requireProblem(t, reader.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
}

// A parked claim-next long poll is answered by the change that makes a node
// claimable for it (a create, a run_at passing, a dependency completing):
// the change wakes it, with no polling interval in between.
func TestQueueClaimLongPollAnswersPromptly(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	alice := e.user("alice")

	// A node is created while the poll waits.
	poll := startPoll(t, e, alice, "lp-new")
	e.mustCreate(client.NodeCreate{ID: ptr("fresh"), Type: "task", Queue: ptr("lp-new")})
	created := time.Now()
	lat := awaitPoll(t, e, poll, created, "fresh")
	t.Logf("long poll answered %v after the create returned", lat)

	// A delayed node's run_at passes while the poll waits.
	e.mustCreate(client.NodeCreate{ID: ptr("later"), Type: "task", Queue: ptr("lp-delay"), DelayMS: ptr(int64(30000))})
	poll = startPoll(t, e, alice, "lp-delay")
	e.clk.Advance(30 * time.Second)
	advanced := time.Now()
	lat = awaitPoll(t, e, poll, advanced, "later")
	t.Logf("long poll answered %v after the clock passed run_at", lat)

	// A blocked node's dependency completes while the poll waits.
	e.mustCreate(client.NodeCreate{ID: ptr("first"), Type: "task", Queue: ptr("lp-deps")})
	e.mustCreate(client.NodeCreate{ID: ptr("second"), Type: "task", Queue: ptr("lp-block"), DependsOn: &[]string{"first"}})
	bob := e.user("bob")
	first, err := bob.ClaimNodeWithResponse(ctx, "first", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, first.StatusCode(), string(first.Body))
	poll = startPoll(t, e, alice, "lp-block")
	done, err := bob.CompleteNodeWithResponse(ctx, "first", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
	completed := time.Now()
	lat = awaitPoll(t, e, poll, completed, "second")
	t.Logf("long poll answered %v after the dependency completed", lat)
}

func TestQueueClaimsManyInClaimOrder(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	type made struct {
		id       string
		priority int64
		created  time.Time
	}
	var all []made
	for i := range 10 {
		n := e.mustCreate(client.NodeCreate{ID: ptr(fmt.Sprintf("m%02d", i)), Type: "task", Queue: ptr("many"), Priority: ptr(int64(i % 3))})
		all = append(all, made{n.ID, n.Priority, n.CreatedAt})
		e.clk.Advance(time.Millisecond)
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.priority != b.priority {
			return a.priority > b.priority
		}
		if !a.created.Equal(b.created) {
			return a.created.Before(b.created)
		}
		return a.id < b.id
	})
	want := make([]string, len(all))
	for i, m := range all {
		want[i] = m.id
	}
	alice := e.user("alice")

	four, err := alice.ClaimNextManyWithResponse(ctx, "many", client.ClaimManyRequest{Max: ptr(4), WaitMS: ptr(int64(0))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, four.StatusCode(), string(four.Body))
	require.Equal(t, want[:4], ids(four.JSON200.Items), "in claim order")
	for _, it := range four.JSON200.Items {
		require.Equal(t, "alice", it.Lease.By)
		require.Equal(t, it.Node.ID, it.Lease.NodeID)
		require.Equal(t, client.NodeStatusRunning, it.Node.Status)
		require.EqualValues(t, 1, it.Node.Attempts)
	}

	rest, err := alice.ClaimNextManyWithResponse(ctx, "many", client.ClaimManyRequest{Max: ptr(100), WaitMS: ptr(int64(0))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, rest.StatusCode(), string(rest.Body))
	require.Equal(t, want[4:], ids(rest.JSON200.Items))

	none, err := alice.ClaimNextManyWithResponse(ctx, "many", client.ClaimManyRequest{Max: ptr(10), WaitMS: ptr(int64(0))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, none.StatusCode(), "an empty claims answer is 200: %s", none.Body)
	require.NotNil(t, none.JSON200.Items)
	require.Empty(t, none.JSON200.Items)
	require.JSONEq(t, `{"items":[]}`, string(none.Body))

	began := time.Now()
	waited, err := alice.ClaimNextManyWithResponse(ctx, "many", client.ClaimManyRequest{Max: ptr(10), WaitMS: ptr(int64(300))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, waited.StatusCode(), string(waited.Body))
	require.Empty(t, waited.JSON200.Items)
	require.GreaterOrEqual(t, time.Since(began), 250*time.Millisecond)

	for _, max := range []int{0, 1001, -1} {
		bad, err := alice.ClaimNextManyWithResponse(ctx, "many", client.ClaimManyRequest{Max: ptr(max)})
		require.NoError(t, err)
		requireProblem(t, bad.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	}
	tok := e.token("acme", "alice")
	resp, b := e.raw(http.MethodPost, "/v1/queues/many/claim", tok, "application/json", `{"max":2}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "max is not a field of the single claim: %s", b)
	resp, b = e.raw(http.MethodPost, "/v1/queues/many/claims", tok, "application/json", `{"max":1.5}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))

	// Without max, claims takes one.
	e.mustCreate(client.NodeCreate{ID: ptr("solo-1"), Type: "task", Queue: ptr("many")})
	e.mustCreate(client.NodeCreate{ID: ptr("solo-2"), Type: "task", Queue: ptr("many")})
	one, err := alice.ClaimNextManyWithResponse(ctx, "many", client.ClaimManyRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, one.StatusCode(), string(one.Body))
	require.Equal(t, []string{"solo-1"}, ids(one.JSON200.Items), "max defaults to 1")
}

func TestQueueClaimsManyStopsAtTheLeaseCap(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	pol, err := e.admin().PatchTenantPolicyWithResponse(ctx, client.PolicyPatch{MaxLeasesPerIdentity: client.Value(int64(3))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, pol.StatusCode(), string(pol.Body))
	require.EqualValues(t, 3, pol.JSON200.MaxLeasesPerIdentity)
	items := make([]client.NodeCreate, 10)
	for i := range items {
		items[i] = client.NodeCreate{ID: ptr(fmt.Sprintf("c%02d", i)), Type: "task", Queue: ptr("capped"), Priority: ptr(int64(-i))}
	}
	batch, err := e.dispatcher().CreateNodesBatchWithResponse(ctx, nil, client.NodeBatchCreate{Items: items})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, batch.StatusCode(), string(batch.Body))

	carol := e.user("carol")
	got, err := carol.ClaimNextManyWithResponse(ctx, "capped", client.ClaimManyRequest{Max: ptr(10), WaitMS: ptr(int64(0))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, got.StatusCode(), string(got.Body))
	require.Equal(t, []string{"c00", "c01", "c02"}, ids(got.JSON200.Items), "what fits under max_leases_per_identity = 3")

	past, err := carol.ClaimNextWithResponse(ctx, "capped", client.ClaimNextRequest{WaitMS: ptr(int64(0))})
	require.NoError(t, err)
	requireProblem(t, past.ApplicationProblemJSON429, http.StatusTooManyRequests, client.ProblemCodeRateLimited)

	dave, err := e.user("dave").ClaimNextManyWithResponse(ctx, "capped", client.ClaimManyRequest{Max: ptr(10), WaitMS: ptr(int64(0))})
	require.NoError(t, err)
	require.Equal(t, []string{"c03", "c04", "c05"}, ids(dave.JSON200.Items), "the cap is per identity")
}

func TestQueueClaimConcurrentWorkersTakeEachNodeOnce(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	const nodes, workers = 1000, 32
	items := make([]client.NodeCreate, nodes)
	for i := range items {
		items[i] = client.NodeCreate{ID: ptr(fmt.Sprintf("b%04d", i)), Type: "t", Queue: ptr("bulk")}
	}
	began := time.Now()
	batch, err := e.dispatcher().CreateNodesBatchWithResponse(ctx, nil, client.NodeBatchCreate{Items: items})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, batch.StatusCode(), string(batch.Body))
	require.Len(t, batch.JSON201.Items, nodes)
	t.Logf("batch create of %d nodes took %v", nodes, time.Since(began))

	clients := make([]*client.ClientWithResponses, workers)
	for w := range clients {
		clients[w] = e.user(fmt.Sprintf("worker-%02d", w))
	}
	var (
		mu      sync.Mutex
		claimed []string
		failed  atomic.Int64
		wg      sync.WaitGroup
	)
	began = time.Now()
	for w := range workers {
		wg.Add(1)
		go func(c *client.ClientWithResponses, who string) {
			defer wg.Done()
			var mine []string
			defer func() {
				mu.Lock()
				claimed = append(claimed, mine...)
				mu.Unlock()
			}()
			for {
				res, err := c.ClaimNextWithResponse(ctx, "bulk", client.ClaimNextRequest{WaitMS: ptr(int64(0))})
				if err != nil {
					failed.Add(1)
					t.Errorf("%s: claim: %v", who, err)
					return
				}
				switch res.StatusCode() {
				case http.StatusNoContent:
					return
				case http.StatusOK:
				default:
					failed.Add(1)
					t.Errorf("%s: claim answered %d: %s", who, res.StatusCode(), res.Body)
					return
				}
				cr := res.JSON200
				if cr.Lease.By != who {
					failed.Add(1)
					t.Errorf("%s: got a lease of %s", who, cr.Lease.By)
				}
				mine = append(mine, cr.Node.ID)
				done, err := c.CompleteNodeWithResponse(ctx, cr.Node.ID, client.CompleteRequest{Fence: ptr(cr.Lease.Fence)})
				if err != nil || done.StatusCode() != http.StatusOK {
					failed.Add(1)
					t.Errorf("%s: complete %s: %v %s", who, cr.Node.ID, err, done.Body)
					return
				}
			}
		}(clients[w], fmt.Sprintf("worker-%02d", w))
	}
	wg.Wait()
	elapsed := time.Since(began)
	t.Logf("%d workers claimed and completed %d nodes in %v (%.0f nodes/s)", workers, len(claimed), elapsed, float64(len(claimed))/elapsed.Seconds())
	require.Zero(t, failed.Load())

	seen := map[string]int{}
	for _, id := range claimed {
		seen[id]++
	}
	for id, n := range seen {
		require.Equal(t, 1, n, "%s claimed %d times", id, n)
	}
	require.Len(t, claimed, nodes)
	require.Len(t, seen, nodes)
	for _, it := range items {
		require.Contains(t, seen, *it.ID)
	}

	list, err := e.dispatcher().ListNodesWithResponse(ctx, &client.ListNodesParams{Queue: ptr("bulk"), Status: ptr(client.NodeStatusDone), Limit: ptr(1000)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, list.StatusCode(), string(list.Body))
	require.Len(t, list.JSON200.Items, nodes, "every node ends done")
	for _, n := range list.JSON200.Items {
		require.EqualValues(t, 1, n.Attempts, "%s ran once", n.ID)
	}
	q := queueNamed(t, listQueues(t, e.dispatcher()), "bulk")
	require.EqualValues(t, nodes, q.Counts["done"])
	require.Zero(t, q.Counts["queued"])
	require.Zero(t, q.Counts["running"])
	require.Zero(t, q.Ready)
}

func TestQueuePauseResume(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(client.NodeCreate{ID: ptr("p1"), Type: "task", Queue: ptr("pq")})
	d, worker := e.dispatcher(), e.user("alice")

	denied, err := worker.PauseQueueWithResponse(ctx, "pq")
	require.NoError(t, err)
	requireProblem(t, denied.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
	require.False(t, queueNamed(t, listQueues(t, d), "pq").Paused, "a refused pause changes nothing")

	for range 2 { // idempotent
		p, err := d.PauseQueueWithResponse(ctx, "pq")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, p.StatusCode(), string(p.Body))
		require.Equal(t, "pq", p.JSON200.Queue)
		require.True(t, p.JSON200.Paused)
		require.Zero(t, p.JSON200.Ready)
		require.Nil(t, p.JSON200.OldestReadyAt)
		require.EqualValues(t, 1, p.JSON200.Counts["queued"])
	}
	requireNothing(t, worker, "pq", client.ClaimNextRequest{})
	many, err := worker.ClaimNextManyWithResponse(ctx, "pq", client.ClaimManyRequest{Max: ptr(5)})
	require.NoError(t, err)
	require.Empty(t, many.JSON200.Items)
	q := queueNamed(t, listQueues(t, worker), "pq")
	require.True(t, q.Paused)
	require.Zero(t, q.Ready)
	require.Nil(t, q.OldestReadyAt)
	require.EqualValues(t, 1, q.Counts["queued"])
	n, err := worker.GetNodeWithResponse(ctx, "p1")
	require.NoError(t, err)
	require.False(t, n.JSON200.Ready, "a node of a paused queue is not ready")
	require.Equal(t, client.NodeStatusQueued, n.JSON200.Status)
	byID, err := worker.ClaimNodeWithResponse(ctx, "p1", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, byID.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeNotClaimable)
	require.Equal(t, "blocked", byID.ApplicationProblemJSON409.Reason)

	deniedResume, err := worker.ResumeQueueWithResponse(ctx, "pq")
	require.NoError(t, err)
	requireProblem(t, deniedResume.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)

	poll := startPoll(t, e, worker, "pq")
	r, err := d.ResumeQueueWithResponse(ctx, "pq")
	require.NoError(t, err)
	resumed := time.Now()
	require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
	require.False(t, r.JSON200.Paused)
	lat := awaitPoll(t, e, poll, resumed, "p1")
	t.Logf("long poll on a paused queue answered %v after resume", lat)

	again, err := d.ResumeQueueWithResponse(ctx, "pq")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, again.StatusCode(), "resume is idempotent: %s", again.Body)
	require.False(t, again.JSON200.Paused)
	require.EqualValues(t, 1, again.JSON200.Counts["running"])

	bad, err := d.PauseQueueWithResponse(ctx, "-bad")
	require.NoError(t, err)
	requireProblem(t, bad.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
}

func TestQueueMaxRunning(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	for i := 1; i <= 8; i++ {
		e.mustCreate(client.NodeCreate{ID: ptr(fmt.Sprintf("mr%d", i)), Type: "task", Queue: ptr("mr")})
		e.clk.Advance(time.Millisecond)
	}
	d := e.dispatcher()
	alice, bob, carol, dave := e.user("alice"), e.user("bob"), e.user("carol"), e.user("dave")

	denied, err := alice.UpdateQueueWithResponse(ctx, "mr", client.QueuePatch{MaxRunning: ptr(int64(2))})
	require.NoError(t, err)
	requireProblem(t, denied.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)

	set, err := d.UpdateQueueWithResponse(ctx, "mr", client.QueuePatch{MaxRunning: ptr(int64(2))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, set.StatusCode(), string(set.Body))
	require.Equal(t, "mr", set.JSON200.Queue)
	require.EqualValues(t, 2, set.JSON200.MaxRunning)
	require.EqualValues(t, 2, queueNamed(t, listQueues(t, d), "mr").MaxRunning)

	require.Equal(t, "mr1", mustClaimNext(t, alice, "mr", client.ClaimNextRequest{}).Node.ID)
	require.Equal(t, "mr2", mustClaimNext(t, bob, "mr", client.ClaimNextRequest{}).Node.ID)
	requireNothing(t, carol, "mr", client.ClaimNextRequest{})
	atCap, err := carol.ClaimNextManyWithResponse(ctx, "mr", client.ClaimManyRequest{Max: ptr(5)})
	require.NoError(t, err)
	require.Empty(t, atCap.JSON200.Items, "claims hands out nothing at the cap either")

	// A slot frees up: the waiting claimer gets the next node at once.
	poll := startPoll(t, e, carol, "mr")
	done, err := alice.CompleteNodeWithResponse(ctx, "mr1", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
	completed := time.Now()
	lat := awaitPoll(t, e, poll, completed, "mr3")
	t.Logf("long poll at max_running answered %v after a slot freed up", lat)
	requireNothing(t, dave, "mr", client.ClaimNextRequest{})

	// The cap holds for claims by id too (max_running: "at most n live
	// leases in that queue at once"): 429 rate_limited, and nothing changes.
	byID, err := dave.ClaimNodeWithResponse(ctx, "mr5", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, byID.ApplicationProblemJSON429, http.StatusTooManyRequests, client.ProblemCodeRateLimited)
	require.NotEmpty(t, byID.HTTPResponse.Header.Get("Retry-After"))
	q := queueNamed(t, listQueues(t, d), "mr")
	require.EqualValues(t, 2, q.Counts["running"])
	require.EqualValues(t, 2, q.MaxRunning)
	requireNothing(t, dave, "mr", client.ClaimNextRequest{})

	// Raising the cap to 4 with 2 running leaves room for exactly two more.
	set, err = d.UpdateQueueWithResponse(ctx, "mr", client.QueuePatch{MaxRunning: ptr(int64(4))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, set.StatusCode(), string(set.Body))
	room, err := e.user("eve").ClaimNextManyWithResponse(ctx, "mr", client.ClaimManyRequest{Max: ptr(10)})
	require.NoError(t, err)
	require.Equal(t, []string{"mr4", "mr5"}, ids(room.JSON200.Items))

	// 0 removes the cap.
	set, err = d.UpdateQueueWithResponse(ctx, "mr", client.QueuePatch{MaxRunning: ptr(int64(0))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, set.StatusCode(), string(set.Body))
	require.Zero(t, set.JSON200.MaxRunning)
	frank := e.user("frank")
	require.Equal(t, "mr6", mustClaimNext(t, frank, "mr", client.ClaimNextRequest{}).Node.ID)
	rest, err := frank.ClaimNextManyWithResponse(ctx, "mr", client.ClaimManyRequest{Max: ptr(10)})
	require.NoError(t, err)
	require.Equal(t, []string{"mr7", "mr8"}, ids(rest.JSON200.Items))

	neg, err := d.UpdateQueueWithResponse(ctx, "mr", client.QueuePatch{MaxRunning: ptr(int64(-1))})
	require.NoError(t, err)
	requireProblem(t, neg.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	tok := e.token("acme", "head", "dispatcher")
	for _, body := range []string{`{"max_running":null}`, `{"max_running":1.5}`, `{"max_running":"2"}`, `{"max_running":1,"paused":true}`} {
		resp, b := e.raw(http.MethodPatch, "/v1/queues/mr", tok, "application/json", body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", body, b)
	}
	require.Zero(t, queueNamed(t, listQueues(t, d), "mr").MaxRunning, "refused patches change nothing")
}

func TestQueueListCounts(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	alice := e.user("alice")
	mk := func(id, queue string, mod func(*client.NodeCreate)) client.Node {
		b := client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr(queue)}
		if mod != nil {
			mod(&b)
		}
		return e.mustCreate(b)
	}
	claim := func(id string) int64 {
		res, err := alice.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		return res.JSON200.Lease.Fence
	}

	mk("g-run", "gamma", nil)
	claim("g-run")
	mk("a-delayed", "alpha", func(b *client.NodeCreate) { b.DelayMS = ptr(int64(60000)) })
	e.clk.Advance(time.Second)
	oldest := mk("a-ready-old", "alpha", nil)
	e.clk.Advance(time.Second)
	mk("a-ready-new", "alpha", func(b *client.NodeCreate) { b.Priority = ptr(int64(9)) })
	mk("a-blocked", "alpha", func(b *client.NodeCreate) { b.DependsOn = &[]string{"a-ready-old"} })
	mk("a-running", "alpha", nil)
	claim("a-running")
	mk("a-done", "alpha", nil)
	_, err := alice.CompleteNodeWithResponse(ctx, "a-done", client.CompleteRequest{Fence: ptr(claim("a-done"))})
	require.NoError(t, err)
	mk("a-failed", "alpha", nil)
	_, err = alice.FailNodeWithResponse(ctx, "a-failed", client.FailRequest{Error: "no", Requeue: ptr(false), Fence: ptr(claim("a-failed"))})
	require.NoError(t, err)
	mk("a-dead", "alpha", func(b *client.NodeCreate) { b.MaxAttempts = ptr(int64(1)) })
	_, err = alice.FailNodeWithResponse(ctx, "a-dead", client.FailRequest{Error: "no", Fence: ptr(claim("a-dead"))})
	require.NoError(t, err)
	mk("a-cancelled", "alpha", nil)
	_, err = d.CancelNodeWithResponse(ctx, "a-cancelled", client.CancelRequest{})
	require.NoError(t, err)
	e.mustCreate(client.NodeCreate{ID: ptr("no-queue"), Type: "task"})
	p, err := d.PauseQueueWithResponse(ctx, "beta")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, p.StatusCode(), string(p.Body))

	other := e.as(e.token("other", "mallory", "dispatcher"))
	for _, b := range []client.NodeCreate{
		{ID: ptr("x1"), Type: "task", Queue: ptr("alpha")},
		{ID: ptr("x2"), Type: "task", Queue: ptr("omega")},
	} {
		res, err := other.CreateNodeWithResponse(ctx, nil, b)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	}
	op, err := other.PauseQueueWithResponse(ctx, "delta")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, op.StatusCode(), string(op.Body))

	list := listQueues(t, e.user("viewer", "reader"))
	names := make([]string, len(list.Items))
	for i, q := range list.Items {
		names[i] = q.Queue
		require.Len(t, q.Counts, 7, "every status is present in %s: %v", q.Queue, q.Counts)
		for _, st := range []string{"open", "queued", "running", "done", "failed", "dead", "cancelled"} {
			require.Contains(t, q.Counts, st)
		}
	}
	require.Equal(t, []string{"alpha", "beta", "gamma"}, names, "by name; no other tenant's queues")

	alpha := list.Items[0]
	require.Equal(t, map[string]int64{"open": 0, "queued": 4, "running": 1, "done": 1, "failed": 1, "dead": 1, "cancelled": 1}, alpha.Counts,
		"queued: a-delayed, a-ready-old, a-ready-new, a-blocked")
	require.False(t, alpha.Paused)
	require.Zero(t, alpha.MaxRunning)
	require.Equal(t, 2, alpha.Ready, "a-ready-old and a-ready-new")
	require.NotNil(t, alpha.OldestReadyAt)
	require.True(t, oldest.CreatedAt.Equal(*alpha.OldestReadyAt), "oldest_ready_at %v is a-ready-old's created_at %v (not a-delayed's)", *alpha.OldestReadyAt, oldest.CreatedAt)

	beta := list.Items[1]
	require.True(t, beta.Paused, "a queue with only settings is listed")
	require.Zero(t, beta.Ready)
	require.Nil(t, beta.OldestReadyAt)
	for st, n := range beta.Counts {
		require.Zero(t, n, st)
	}

	gamma := list.Items[2]
	require.EqualValues(t, 1, gamma.Counts["running"])
	require.Zero(t, gamma.Ready)
	require.Nil(t, gamma.OldestReadyAt, "null when nothing is claimable")
	require.Contains(t, string(mustListRaw(t, e)), `"oldest_ready_at":null`)

	// The delayed node's run_at passes: it is the oldest claimable now.
	e.clk.Advance(time.Minute)
	alpha = queueNamed(t, listQueues(t, d), "alpha")
	require.Equal(t, 3, alpha.Ready)
	delayed, err := d.GetNodeWithResponse(ctx, "a-delayed")
	require.NoError(t, err)
	require.True(t, delayed.JSON200.CreatedAt.Equal(*alpha.OldestReadyAt))

	// A claim moves the counts and the oldest.
	mustClaimNext(t, alice, "alpha", client.ClaimNextRequest{Types: &[]string{"task"}})
	alpha = queueNamed(t, listQueues(t, d), "alpha")
	require.EqualValues(t, 2, alpha.Counts["running"])
	require.EqualValues(t, 3, alpha.Counts["queued"])
	require.Equal(t, 2, alpha.Ready)

	theirs := listQueues(t, other)
	var theirNames []string
	for _, q := range theirs.Items {
		theirNames = append(theirNames, q.Queue)
	}
	require.Equal(t, []string{"alpha", "delta", "omega"}, theirNames)
	require.EqualValues(t, 1, theirs.Items[0].Counts["queued"], "the other tenant's alpha is its own")
	require.True(t, slices.IsSortedFunc(theirs.Items, func(a, b client.Queue) int {
		return strings.Compare(a.Queue, b.Queue)
	}))
}

func mustListRaw(t *testing.T, e *env) []byte {
	t.Helper()
	resp, b := e.raw(http.MethodGet, "/v1/queues", e.token("acme", "viewer", "reader"), "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return b
}
