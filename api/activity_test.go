package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/apitest"
	"github.com/tether-run/tether/internal/server"
)

func TestCommentsCreateListAndPage(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(task("n1"))
	alice := e.user("alice")

	res, err := alice.CreateCommentWithResponse(ctx, "n1", client.CommentCreate{Body: "looking into it"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	first := *res.JSON201
	id, err := uuid.Parse(first.ID)
	require.NoError(t, err)
	require.EqualValues(t, 7, id.Version(), "comment ids are UUIDv7")
	require.Equal(t, "n1", first.NodeID)
	require.Equal(t, "alice", first.By)
	require.Equal(t, "looking into it", first.Body)
	require.Equal(t, e.clk.Now().UnixMilli(), first.CreatedAt.UnixMilli())

	for i := range 4 {
		e.clk.Advance(time.Second)
		res, err := e.user("bob").CreateCommentWithResponse(ctx, "n1", client.CommentCreate{Body: fmt.Sprintf("note %d", i)})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	}

	reader := e.user("viewer", "reader")
	all, err := reader.ListCommentsWithResponse(ctx, "n1", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, all.StatusCode(), string(all.Body))
	require.Len(t, all.JSON200.Items, 5)
	require.Nil(t, all.JSON200.NextCursor)
	require.Equal(t, first, all.JSON200.Items[0], "oldest first")
	for i, c := range all.JSON200.Items[1:] {
		require.Equal(t, fmt.Sprintf("note %d", i), c.Body)
		require.Equal(t, "bob", c.By)
	}

	var paged []client.Comment
	var cursor *string
	for range 3 {
		page, err := reader.ListCommentsWithResponse(ctx, "n1", &client.ListCommentsParams{Limit: ptr(2), Cursor: cursor})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, page.StatusCode(), string(page.Body))
		paged = append(paged, page.JSON200.Items...)
		cursor = page.JSON200.NextCursor
		if cursor == nil {
			break
		}
	}
	require.Nil(t, cursor, "three pages of at most two hold five comments")
	require.Equal(t, all.JSON200.Items, paged)

	bad, err := reader.ListCommentsWithResponse(ctx, "n1", &client.ListCommentsParams{Cursor: ptr("not-a-cursor")})
	require.NoError(t, err)
	requireProblem(t, bad.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)

	denied, err := reader.CreateCommentWithResponse(ctx, "n1", client.CommentCreate{Body: "readers only read"})
	require.NoError(t, err)
	requireProblem(t, denied.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)

	evs, err := reader.ListNodeEventsWithResponse(ctx, "n1", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, evs.StatusCode(), string(evs.Body))
	var commented []client.Event
	for _, ev := range evs.JSON200.Items {
		if ev.Type == client.EventTypeCommented {
			commented = append(commented, ev)
		}
	}
	require.Len(t, commented, 5, "one commented event per comment")
	require.Equal(t, "alice", commented[0].By)
	require.Equal(t, map[string]any{"comment_id": first.ID}, commented[0].Data)
	require.Equal(t, first.CreatedAt.UnixMilli(), commented[0].At.UnixMilli())
}

func TestCommentValidationAndNotFound(t *testing.T) {
	t.Parallel()
	e := start(t, func(c *server.Config) { c.MaxBodyBytes = 1 << 20 })
	ctx := context.Background()
	e.mustCreate(task("n1"))
	tok := e.token("acme", "alice")

	for _, body := range []string{
		`{}`, `{"body":""}`, `{"body":null}`, `{"body":5}`, `{"body":"x","extra":1}`, `not json`, ``,
		`{"body":"` + strings.Repeat("x", 65537) + `"}`,
	} {
		resp, b := e.raw(http.MethodPost, "/v1/nodes/n1/comments", tok, "application/json", body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%.60s: %s", body, b)
	}
	for _, body := range []string{strings.Repeat("x", 65536), strings.Repeat("é", 65536), "x"} {
		res, err := e.user("alice").CreateCommentWithResponse(ctx, "n1", client.CommentCreate{Body: body})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, res.StatusCode(), "the limit counts characters, not bytes: %.200s", res.Body)
		require.Equal(t, body, res.JSON201.Body)
	}

	alice := e.user("alice")
	missing, err := alice.CreateCommentWithResponse(ctx, "nope", client.CommentCreate{Body: "hello"})
	require.NoError(t, err)
	requireProblem(t, missing.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	list, err := alice.ListCommentsWithResponse(ctx, "nope", nil)
	require.NoError(t, err)
	requireProblem(t, list.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)

	other := e.as(e.token("other", "mallory", "admin"))
	theirs, err := other.CreateCommentWithResponse(ctx, "n1", client.CommentCreate{Body: "hello"})
	require.NoError(t, err)
	requireProblem(t, theirs.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	peek, err := other.ListCommentsWithResponse(ctx, "n1", nil)
	require.NoError(t, err)
	requireProblem(t, peek.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)

	del, err := e.dispatcher().DeleteNodeWithResponse(ctx, "n1", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode(), string(del.Body))
	gone, err := alice.ListCommentsWithResponse(ctx, "n1", nil)
	require.NoError(t, err)
	requireProblem(t, gone.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	late, err := alice.CreateCommentWithResponse(ctx, "n1", client.CommentCreate{Body: "too late"})
	require.NoError(t, err)
	requireProblem(t, late.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)

	e.clk.Advance(time.Millisecond)
	e.mustCreate(task("n1"))
	fresh, err := alice.ListCommentsWithResponse(ctx, "n1", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, fresh.StatusCode(), string(fresh.Body))
	require.Empty(t, fresh.JSON200.Items, "a node re-created under the id starts with no comments")
}

// TestNodeEventsPinTheLifecycle pins the events a node's lifecycle appends:
// the assigned edge is an event of the work node, renewals are none.
func TestNodeEventsPinTheLifecycle(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(task("t1"))
	alice := e.user("alice")

	e.clk.Advance(time.Second)
	claim, err := alice.ClaimNodeWithResponse(ctx, "t1", client.ClaimRequest{TTLMS: ptr(int64(60000))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))
	claimedAt := e.clk.Now()
	e.clk.Advance(time.Second)
	renew, err := alice.RenewLeaseWithResponse(ctx, "t1", client.RenewRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, renew.StatusCode(), string(renew.Body))
	ext, err := alice.ExtendLeaseWithResponse(ctx, "t1", client.ExtendRequest{MS: 60000})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ext.StatusCode(), string(ext.Body))
	done, err := alice.CompleteNodeWithResponse(ctx, "t1", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))

	r := e.user("viewer", "reader")
	res, err := r.ListNodeEventsWithResponse(ctx, "t1", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	evs := res.JSON200.Items
	require.Equal(t, []client.EventType{
		client.EventTypeCreated, client.EventTypeEdgeAdded, client.EventTypeClaimed,
		client.EventTypeExtended, client.EventTypeEdgeRetired, client.EventTypeCompleted,
	}, eventTypes(evs))
	requireIncreasing(t, evs)
	for _, ev := range evs {
		require.Equal(t, "t1", ev.NodeID)
	}
	require.Equal(t, "head", evs[0].By)
	require.Equal(t, map[string]any{"type": "task", "status": "queued"}, evs[0].Data)
	require.Equal(t, map[string]any{"from": "t1", "type": "assigned", "to": "identity:alice"}, evs[1].Data)
	require.Equal(t, "alice", evs[2].By)
	require.Equal(t, claimedAt.UnixMilli(), evs[2].At.UnixMilli())
	require.EqualValues(t, 1, evs[2].Data["fence"])
	require.EqualValues(t, 1, evs[2].Data["attempt"])
	require.Equal(t, "done", evs[4].Data["outcome"])
	require.Equal(t, strconv.FormatInt(evs[5].Seq, 10), *res.JSON200.NextCursor, "next_cursor is the seq of the last event")

	page, err := r.ListNodeEventsWithResponse(ctx, "t1", &client.ListNodeEventsParams{After: ptr(evs[1].Seq), Limit: ptr(2)})
	require.NoError(t, err)
	require.Equal(t, evs[2:4], page.JSON200.Items)
	require.Equal(t, strconv.FormatInt(evs[3].Seq, 10), *page.JSON200.NextCursor)
	end, err := r.ListNodeEventsWithResponse(ctx, "t1", &client.ListNodeEventsParams{After: ptr(evs[5].Seq)})
	require.NoError(t, err)
	require.Empty(t, end.JSON200.Items)
	require.Nil(t, end.JSON200.NextCursor)

	// A deleted node's events are history: still listed, ending with deleted.
	del, err := e.dispatcher().DeleteNodeWithResponse(ctx, "t1", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode(), string(del.Body))
	after, err := r.ListNodeEventsWithResponse(ctx, "t1", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, after.StatusCode(), string(after.Body))
	require.Len(t, after.JSON200.Items, 7)
	require.Equal(t, evs, after.JSON200.Items[:6])
	require.Equal(t, client.EventTypeDeleted, after.JSON200.Items[6].Type)
	past, err := r.ListNodeEventsWithResponse(ctx, "t1", &client.ListNodeEventsParams{After: ptr(after.JSON200.Items[6].Seq)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, past.StatusCode(), "a deleted node with history answers past its end too")
	require.Empty(t, past.JSON200.Items)

	for _, c := range []*client.ClientWithResponses{r, e.as(e.token("other", "mallory", "admin"))} {
		missing, err := c.ListNodeEventsWithResponse(ctx, "never-was", nil)
		require.NoError(t, err)
		requireProblem(t, missing.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	}
	theirs, err := e.as(e.token("other", "mallory", "admin")).ListNodeEventsWithResponse(ctx, "t1", nil)
	require.NoError(t, err)
	requireProblem(t, theirs.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)

	tok := e.token("acme", "viewer", "reader")
	for _, q := range []string{"after=-1", "after=x", "after=1.5", "limit=0", "limit=1001"} {
		resp, b := e.raw(http.MethodGet, "/v1/nodes/t1/events?"+q, tok, "", "")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", q, b)
	}
}

func TestTenantEventsIncreaseAndPage(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	for i := range 5 {
		e.mustCreate(task(fmt.Sprintf("p%d", i)))
	}
	_, err := e.dispatcher().CreateEdgeWithResponse(ctx, client.EdgeCreate{From: "p1", Type: "depends_on", To: "p0"})
	require.NoError(t, err)
	r := e.user("viewer", "reader")

	all, err := r.ListEventsWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, all.StatusCode(), string(all.Body))
	require.Len(t, all.JSON200.Items, 6)
	requireIncreasing(t, all.JSON200.Items)
	require.Equal(t, client.EventTypeEdgeAdded, all.JSON200.Items[5].Type)
	require.Equal(t, "p1", all.JSON200.Items[5].NodeID)

	var paged []client.Event
	var after *int64
	for {
		page, err := r.ListEventsWithResponse(ctx, &client.ListEventsParams{After: after, Limit: ptr(4)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, page.StatusCode(), string(page.Body))
		if len(page.JSON200.Items) == 0 {
			require.Nil(t, page.JSON200.NextCursor, "an empty page has no cursor")
			break
		}
		paged = append(paged, page.JSON200.Items...)
		seq, err := strconv.ParseInt(*page.JSON200.NextCursor, 10, 64)
		require.NoError(t, err)
		require.Equal(t, page.JSON200.Items[len(page.JSON200.Items)-1].Seq, seq)
		after = &seq
	}
	require.Equal(t, all.JSON200.Items, paged)

	tok := e.token("acme", "viewer", "reader")
	// ?pretty indents the same answer (Echo's c.JSON); without it the page
	// is compact, one line and a newline, whatever else the query holds.
	_, compact := e.raw(http.MethodGet, "/v1/events?after=0&limit=3", tok, "", "")
	_, pretty := e.raw(http.MethodGet, "/v1/events?after=0&limit=3&pretty", tok, "", "")
	require.Equal(t, 1, bytes.Count(compact, []byte("\n")), string(compact))
	require.Contains(t, string(pretty), "\n  \"items\": [\n")
	var want bytes.Buffer
	require.NoError(t, json.Indent(&want, bytes.TrimSpace(compact), "", "  "))
	require.Equal(t, want.String(), string(bytes.TrimSpace(pretty)))
	for _, q := range []string{"after=-1", "after=abc", "limit=0", "limit=1001", "wait_ms=-1", "wait_ms=60001", "wait_ms=1s"} {
		resp, b := e.raw(http.MethodGet, "/v1/events?"+q, tok, "", "")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", q, b)
	}
}

func TestLongPollAnswersWhenAnEventCommits(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(task("before"))
	r := e.user("viewer", "reader")
	last := lastSeq(t, r)

	type answer struct {
		res *client.ListEventsResponse
		err error
		at  time.Time
	}
	done := make(chan answer, 1)
	polled := time.Now()
	e.srv.API.TestSignals.Waiting.Init(t)
	go func() {
		res, err := r.ListEventsWithResponse(ctx, &client.ListEventsParams{After: &last, WaitMS: ptr(5000)})
		done <- answer{res, err, time.Now()}
	}()
	// The poll has reached the server and holds its place among the waits;
	// the assertion below is about what happens after the create, not
	// before it.
	e.srv.API.TestSignals.Waiting.WaitFor(t, func(sub string) bool { return sub == "viewer" })
	select {
	case a := <-done:
		t.Fatalf("the poll answered before any event: %+v", a)
	default:
	}
	sent := time.Now()
	e.mustCreate(task("during"))
	created := time.Now()

	a := <-done
	require.NoError(t, a.err)
	require.Equal(t, http.StatusOK, a.res.StatusCode(), string(a.res.Body))
	require.Len(t, a.res.JSON200.Items, 1)
	require.Equal(t, "during", a.res.JSON200.Items[0].NodeID)
	require.Equal(t, client.EventTypeCreated, a.res.JSON200.Items[0].Type)
	require.Greater(t, a.res.JSON200.Items[0].Seq, last)
	latency := a.at.Sub(created)
	t.Logf("long poll answered %v after the create returned, %v after it was sent (create took %v; the poll was open %v)",
		latency, a.at.Sub(sent), created.Sub(sent), a.at.Sub(polled))
	require.Less(t, latency, 100*time.Millisecond)

	// With events already there, a long poll answers at once.
	start := time.Now()
	now, err := r.ListEventsWithResponse(ctx, &client.ListEventsParams{After: &last, WaitMS: ptr(5000)})
	require.NoError(t, err)
	require.Len(t, now.JSON200.Items, 1)
	require.Less(t, time.Since(start), time.Second)
}

func TestLongPollEmptyAfterWait(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	e.mustCreate(task("only"))
	r := e.user("viewer", "reader")
	last := lastSeq(t, r)

	start := time.Now()
	res, err := r.ListEventsWithResponse(ctx, &client.ListEventsParams{After: &last, WaitMS: ptr(300)})
	elapsed := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Empty(t, res.JSON200.Items)
	require.Nil(t, res.JSON200.NextCursor)
	require.GreaterOrEqual(t, elapsed, 300*time.Millisecond)
	require.Less(t, elapsed, 2*time.Second)
	t.Logf("an empty long poll of 300 ms answered after %v", elapsed)
}

func TestEventStreamResumesWithLastEventID(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.mustCreate(task("old"))
	r := e.user("viewer", "reader")
	last := lastSeq(t, r)
	tok := e.token("acme", "viewer", "reader")

	s := e.openEventStream(tok, fmt.Sprintf("?after=%d", last), "")
	require.Equal(t, "no-cache", s.resp.Header.Get("Cache-Control"))
	e.mustCreate(task("s1"))
	e.mustCreate(task("s2"))
	f1, f2 := s.next(t), s.next(t)
	for i, f := range []sseFrame{f1, f2} {
		require.Equal(t, "created", f.event)
		require.Equal(t, fmt.Sprintf("s%d", i+1), f.ev.NodeID)
		require.Equal(t, strconv.FormatInt(f.ev.Seq, 10), f.id, "the id is the seq")
		require.Equal(t, f.event, string(f.ev.Type))
	}
	require.Greater(t, f1.ev.Seq, last)
	require.Greater(t, f2.ev.Seq, f1.ev.Seq)
	s.close()

	e.mustCreate(task("s3"))
	e.mustCreate(task("s4"))
	// Last-Event-ID wins over the after= the stream was first opened with.
	again := e.openEventStream(tok, fmt.Sprintf("?after=%d", last), f2.id)
	defer again.close()
	f3, f4 := again.next(t), again.next(t)
	require.Equal(t, "s3", f3.ev.NodeID)
	require.Equal(t, "s4", f4.ev.NodeID)
	require.Greater(t, f3.ev.Seq, f2.ev.Seq)
	e.mustCreate(task("s5"))
	require.Equal(t, "s5", again.next(t).ev.NodeID, "and streams on as events commit")

	resp, b := e.rawWithHeaders(http.MethodGet, "/v1/events", tok, "", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "seven"})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
}

func TestEventsStayInTheirTenant(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	otherTok := e.token("other", "watcher", "dispatcher")
	other := e.as(otherTok)
	s := e.openEventStream(otherTok, "", "")
	defer s.close()

	e.mustCreate(task("acme-1"))
	_, err := e.user("alice").CreateCommentWithResponse(ctx, "acme-1", client.CommentCreate{Body: "acme only"})
	require.NoError(t, err)

	poll, err := other.ListEventsWithResponse(ctx, &client.ListEventsParams{WaitMS: ptr(200)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, poll.StatusCode(), string(poll.Body))
	require.Empty(t, poll.JSON200.Items, "other sees none of acme's events")

	res, err := other.CreateNodeWithResponse(ctx, nil, task("other-1"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	f := s.next(t)
	require.Equal(t, "other-1", f.ev.NodeID, "the stream's first event is other's own")

	mine, err := other.ListEventsWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Len(t, mine.JSON200.Items, 1)
	require.Equal(t, "other-1", mine.JSON200.Items[0].NodeID)
	acme, err := e.user("viewer", "reader").ListEventsWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []client.EventType{client.EventTypeCreated, client.EventTypeCommented}, eventTypes(acme.JSON200.Items))
}

func TestShutdownEndsStreamsAndLongPolls(t *testing.T) {
	t.Parallel()
	e := start(t)
	r := e.user("viewer", "reader")
	s := e.openEventStream(e.token("acme", "viewer", "reader"), "", "")
	defer s.close()
	// The stream answered its headers, so it holds its place already: the
	// signals from here on are the three polls'.
	e.srv.API.TestSignals.Waiting.Init(t)
	poll := make(chan *client.ListEventsResponse, 1)
	go func() {
		res, err := r.ListEventsWithResponse(context.Background(), &client.ListEventsParams{WaitMS: ptr(60000)})
		if err != nil {
			t.Error(err)
		}
		poll <- res
	}()
	w := e.user("w1")
	claimPoll := make(chan *client.ClaimNextResponse, 1)
	go func() {
		res, err := w.ClaimNextWithResponse(context.Background(), "empty", client.ClaimNextRequest{WaitMS: ptr(int64(60000))})
		if err != nil {
			t.Error(err)
		}
		claimPoll <- res
	}()
	claimsPoll := make(chan *client.ClaimNextManyResponse, 1)
	go func() {
		res, err := w.ClaimNextManyWithResponse(context.Background(), "empty", client.ClaimManyRequest{Max: ptr(10), WaitMS: ptr(int64(60000))})
		if err != nil {
			t.Error(err)
		}
		claimsPoll <- res
	}()
	reached := map[string]int{}
	for range 3 {
		reached[e.srv.API.TestSignals.Waiting.Wait(t)]++
	}
	require.Equal(t, map[string]int{"viewer": 1, "w1": 2}, reached, "the three polls reached the server")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, e.srv.Shutdown(ctx))
	require.Less(t, time.Since(start), 3*time.Second, "an open stream and a long poll do not hold up Shutdown")
	select {
	case _, ok := <-s.frames:
		require.False(t, ok, "the stream ended")
	case <-time.After(5 * time.Second):
		t.Fatal("the stream is still open")
	}
	res := <-poll
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Empty(t, res.JSON200.Items)
	one := <-claimPoll
	require.Equal(t, http.StatusNoContent, one.StatusCode(), "a claim-next long poll answers nothing claimed: %s", one.Body)
	many := <-claimsPoll
	require.Equal(t, http.StatusOK, many.StatusCode(), string(many.Body))
	require.Empty(t, many.JSON200.Items)
}

func eventTypes(evs []client.Event) []client.EventType {
	out := make([]client.EventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

func requireIncreasing(t *testing.T, evs []client.Event) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		require.Greater(t, evs[i].Seq, evs[i-1].Seq, "seq strictly increases")
	}
}

// lastSeq is the seq of the tenant's latest event.
func lastSeq(t *testing.T, c *client.ClientWithResponses) int64 {
	t.Helper()
	res, err := c.ListEventsWithResponse(context.Background(), &client.ListEventsParams{Limit: ptr(1000)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.NotEmpty(t, res.JSON200.Items)
	return res.JSON200.Items[len(res.JSON200.Items)-1].Seq
}

// sseFrame is one server-sent event of the event stream.
type sseFrame struct {
	id, event, data string
	ev              client.Event
}

type sseStream struct {
	resp   *http.Response
	cancel context.CancelFunc
	frames chan sseFrame
}

// openEventStream opens GET /v1/events as text/event-stream and parses its
// frames in the background; comment lines (keep-alives) are skipped.
func (e *env) openEventStream(tok, query, lastEventID string) *sseStream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/v1/events"+query, nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	hc := &http.Client{Transport: apitest.ValidatingTransport(e.t, nil)}
	resp, err := hc.Do(req)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
	require.Equal(e.t, "text/event-stream", resp.Header.Get("Content-Type"))
	s := &sseStream{resp: resp, cancel: cancel, frames: make(chan sseFrame, 100)}
	go func() {
		defer close(s.frames)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var f sseFrame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.id != "" || f.data != "" {
					if err := json.Unmarshal([]byte(f.data), &f.ev); err != nil {
						e.t.Errorf("frame data is not an event: %q: %v", f.data, err)
					}
					s.frames <- f
				}
				f = sseFrame{}
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "id: "):
				f.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				f.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				f.data = strings.TrimPrefix(line, "data: ")
			default:
				e.t.Errorf("unexpected stream line %q", line)
			}
		}
	}()
	return s
}

func (s *sseStream) next(t *testing.T) sseFrame {
	t.Helper()
	select {
	case f, ok := <-s.frames:
		require.True(t, ok, "the stream ended")
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no event on the stream within 5 s")
	}
	return sseFrame{}
}

func (s *sseStream) close() {
	s.cancel()
	_ = s.resp.Body.Close()
}
