package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// send posts a message and returns it; it must be a 201.
func send(t *testing.T, c *client.ClientWithResponses, m client.MessageCreate) client.Message {
	t.Helper()
	res, err := c.SendMessageWithResponse(context.Background(), m)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	return *res.JSON201
}

// inbox lists a page of the caller's inbox; it must be a 200.
func inbox(t *testing.T, c *client.ClientWithResponses, p client.ListInboxParams) client.MessageList {
	t.Helper()
	res, err := c.ListInboxWithResponse(context.Background(), &p)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return *res.JSON200
}

func bodies(l client.MessageList) []string {
	out := make([]string, len(l.Items))
	for i, m := range l.Items {
		out[i] = m.Body
	}
	return out
}

func ack(t *testing.T, c *client.ClientWithResponses, id string) *client.AckMessageResponse {
	t.Helper()
	res, err := c.AckMessageWithResponse(context.Background(), id)
	require.NoError(t, err)
	return res
}

func getMessage(t *testing.T, c *client.ClientWithResponses, id string) *client.GetMessageResponse {
	t.Helper()
	res, err := c.GetMessageWithResponse(context.Background(), id)
	require.NoError(t, err)
	return res
}

func (e *env) claim(c *client.ClientWithResponses, id string) client.ClaimResponse {
	e.t.Helper()
	res, err := c.ClaimNodeWithResponse(context.Background(), id, client.ClaimRequest{})
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return *res.JSON200
}

func nodeEventTypes(t *testing.T, c *client.ClientWithResponses, id string) []client.EventType {
	t.Helper()
	res, err := c.ListNodeEventsWithResponse(context.Background(), id, &client.ListNodeEventsParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	var out []client.EventType
	for _, ev := range res.JSON200.Items {
		out = append(out, ev.Type)
	}
	return out
}

func TestMessageToNodeFollowsItsHolder(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	head, alice, bob := e.dispatcher(), e.user("alice", "worker"), e.user("bob", "worker")
	e.mustCreate(task("t1"))

	// Sent before anyone holds the node: it waits for whoever will.
	m := send(t, head, client.MessageCreate{To: "node:t1", Body: "use the staging database"})
	require.Equal(t, "head", m.From)
	require.Equal(t, "t1", *m.NodeID)
	require.Equal(t, client.MessageStatePending, m.State)
	require.Empty(t, inbox(t, alice, client.ListInboxParams{}).Items, "nobody holds t1 yet")

	e.claim(alice, "t1")
	got := inbox(t, alice, client.ListInboxParams{Unread: ptr(true)})
	require.Equal(t, []string{"use the staging database"}, bodies(got))
	require.Equal(t, client.MessageStateDelivered, got.Items[0].State)
	require.Equal(t, "alice", *got.Items[0].DeliveredTo)

	// alice lets the node go without reading it; bob takes it over.
	rel, err := alice.ReleaseNodeWithResponse(ctx, "t1", client.ReleaseRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, rel.StatusCode(), string(rel.Body))
	require.Empty(t, inbox(t, alice, client.ListInboxParams{}).Items, "the first holder no longer sees it")
	requireProblem(t, ack(t, alice, m.ID).ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)

	e.claim(bob, "t1")
	got = inbox(t, bob, client.ListInboxParams{Unread: ptr(true)})
	require.Equal(t, []string{"use the staging database"}, bodies(got))
	a := ack(t, bob, m.ID)
	require.Equal(t, http.StatusOK, a.StatusCode(), string(a.Body))
	require.Equal(t, client.MessageStateRead, a.JSON200.State)
	require.Empty(t, inbox(t, bob, client.ListInboxParams{Unread: ptr(true)}).Items)
	require.Len(t, inbox(t, bob, client.ListInboxParams{}).Items, 1, "a read message stays listed without unread=true")

	// The sender sees both receipts: delivered first to alice, read by bob.
	r := getMessage(t, head, m.ID)
	require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
	require.Equal(t, client.MessageStateRead, r.JSON200.State)
	require.Equal(t, "alice", *r.JSON200.DeliveredTo)
	require.Equal(t, "bob", *r.JSON200.ReadBy)
	require.NotNil(t, r.JSON200.ReadAt)

	types := nodeEventTypes(t, head, "t1")
	require.Contains(t, types, client.EventType("message_sent"))
	require.Contains(t, types, client.EventType("message_read"))

	// A handoff by the dispatcher to carol: carol's read happens on the next holder too.
	m2 := send(t, head, client.MessageCreate{To: "node:t1", Body: "second"})
	rel, err = head.ReleaseNodeWithResponse(ctx, "t1", client.ReleaseRequest{To: ptr("carol")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, rel.StatusCode(), string(rel.Body))
	require.Empty(t, inbox(t, bob, client.ListInboxParams{}).Items)
	carol := e.user("carol", "worker")
	e.claim(carol, "t1")
	require.Equal(t, []string{"use the staging database", "second"}, bodies(inbox(t, carol, client.ListInboxParams{})), "oldest first")
	require.Equal(t, http.StatusOK, ack(t, carol, m2.ID).StatusCode())
}

func TestInboxOrderUnreadAckAndPages(t *testing.T) {
	t.Parallel()
	e := start(t)
	head, alice := e.dispatcher(), e.user("alice", "worker")
	ids := map[string]string{}
	for _, m := range []struct {
		body string
		prio int64
	}{{"a-0", 0}, {"b-5", 5}, {"c-0", 0}, {"d-neg", -1}, {"e-5", 5}} {
		ids[m.body] = send(t, head, client.MessageCreate{To: "alice", Body: m.body, Priority: ptr(m.prio)}).ID
		e.clk.Advance(time.Millisecond)
	}
	send(t, head, client.MessageCreate{To: "bob", Body: "not for alice"})

	want := []string{"b-5", "e-5", "a-0", "c-0", "d-neg"}
	require.Equal(t, want, bodies(inbox(t, alice, client.ListInboxParams{})), "priority high first, then oldest")

	// Pages of two walk the same order, each once.
	var paged []string
	var cursor *string
	for {
		l := inbox(t, alice, client.ListInboxParams{Limit: ptr(2), Cursor: cursor})
		paged = append(paged, bodies(l)...)
		if l.NextCursor == nil {
			break
		}
		cursor = l.NextCursor
	}
	require.Equal(t, want, paged)

	// The sender sees the delivery; the read receipt comes with the ack.
	r := getMessage(t, head, ids["c-0"])
	require.Equal(t, client.MessageStateDelivered, r.JSON200.State)
	require.NotNil(t, r.JSON200.DeliveredAt)
	require.Nil(t, r.JSON200.ReadAt)
	e.clk.Advance(time.Second)
	a := ack(t, alice, ids["c-0"])
	require.Equal(t, http.StatusOK, a.StatusCode(), string(a.Body))
	r = getMessage(t, head, ids["c-0"])
	require.Equal(t, client.MessageStateRead, r.JSON200.State)
	require.True(t, r.JSON200.ReadAt.Equal(e.clk.Now()), "read_at is the ack's instant")
	require.Equal(t, "alice", *r.JSON200.ReadBy)
	again := ack(t, alice, ids["c-0"])
	require.Equal(t, http.StatusOK, again.StatusCode())
	require.True(t, again.JSON200.ReadAt.Equal(*r.JSON200.ReadAt), "a second ack changes nothing")

	require.Equal(t, []string{"b-5", "e-5", "a-0", "d-neg"}, bodies(inbox(t, alice, client.ListInboxParams{Unread: ptr(true)})))

	// Only the sender, a recipient and dispatchers see a message.
	requireProblem(t, getMessage(t, e.user("mallory", "worker"), ids["a-0"]).ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	requireProblem(t, getMessage(t, e.user("auditor", "reader"), ids["a-0"]).ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	require.Equal(t, http.StatusOK, getMessage(t, alice, ids["a-0"]).StatusCode())
	requireProblem(t, ack(t, e.user("mallory", "worker"), ids["a-0"]).ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)

	// Threads.
	send(t, head, client.MessageCreate{To: "alice", Body: "t-1", Thread: ptr("review-7")})
	send(t, head, client.MessageCreate{To: "alice", Body: "t-2", Thread: ptr("review-7"), Priority: ptr(int64(9))})
	require.Equal(t, []string{"t-2", "t-1"}, bodies(inbox(t, alice, client.ListInboxParams{Thread: ptr("review-7")})))
	require.Equal(t, "review-7", *inbox(t, alice, client.ListInboxParams{Thread: ptr("review-7")}).Items[0].Thread)
}

func TestInboxLongPollWakesOnANewMessage(t *testing.T) {
	t.Parallel()
	e := start(t)
	head, alice := e.dispatcher(), e.user("alice", "worker")

	// A wait with nothing to wake it runs out empty.
	require.Empty(t, inbox(t, alice, client.ListInboxParams{Unread: ptr(true), WaitMS: ptr(50)}).Items)

	type answer struct {
		l    client.MessageList
		took time.Duration
	}
	done := make(chan answer, 1)
	go func() {
		began := time.Now()
		res, err := alice.ListInboxWithResponse(context.Background(), &client.ListInboxParams{Unread: ptr(true), WaitMS: ptr(30000)})
		if err != nil || res.JSON200 == nil {
			done <- answer{}
			return
		}
		done <- answer{*res.JSON200, time.Since(began)}
	}()
	// A message for someone else does not answer alice's poll; hers does.
	send(t, head, client.MessageCreate{To: "bob", Body: "for bob"})
	send(t, head, client.MessageCreate{To: "alice", Body: "stop and summarize"})
	select {
	case a := <-done:
		require.Equal(t, []string{"stop and summarize"}, bodies(a.l))
		require.Less(t, a.took, 20*time.Second, "woken by the message, not by the end of the wait")
	case <-time.After(20 * time.Second):
		t.Fatal("the long poll was not woken by a new message")
	}
}

func TestMessageTTLExpiresOnTheClock(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	head, alice := e.dispatcher(), e.user("alice", "worker")
	e.mustCreate(task("t1"))
	e.claim(alice, "t1")

	m := send(t, head, client.MessageCreate{To: "node:t1", Body: "only for a minute", TTLMS: ptr(int64(60000))})
	require.True(t, m.ExpiresAt.Equal(e.clk.Now().Add(time.Minute)))
	keep := send(t, head, client.MessageCreate{To: "alice", Body: "no ttl"})
	renew, err := alice.RenewLeaseWithResponse(ctx, "t1", client.RenewRequest{})
	require.NoError(t, err)
	require.EqualValues(t, 2, renew.JSON200.InboxUnread)

	e.clk.Advance(59 * time.Second)
	require.Len(t, inbox(t, alice, client.ListInboxParams{}).Items, 2, "not yet expired")
	e.clk.Advance(time.Second)
	require.Equal(t, []string{"no ttl"}, bodies(inbox(t, alice, client.ListInboxParams{})), "expired at its instant")
	renew, err = alice.RenewLeaseWithResponse(ctx, "t1", client.RenewRequest{})
	require.NoError(t, err)
	require.EqualValues(t, 1, renew.JSON200.InboxUnread)
	requireProblem(t, ack(t, alice, m.ID).ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)

	r := getMessage(t, head, m.ID)
	require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
	require.Equal(t, client.MessageStateExpired, r.JSON200.State)
	require.Nil(t, r.JSON200.ReadAt)
	require.Equal(t, http.StatusOK, ack(t, alice, keep.ID).StatusCode())

	res, err := http.Get(e.url + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	metrics, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Contains(t, string(metrics), "tether_messages_expired_total 1\n")
	require.Contains(t, string(metrics), "tether_messages_read_total 1\n")
}

func TestInboxUnreadInRenewProgressAndHeartbeat(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	head, alice := e.dispatcher(), e.user("alice", "worker")
	e.mustCreate(task("t1"))
	e.mustCreate(task("t2"))
	e.claim(alice, "t1")
	e.claim(alice, "t2")

	unread := func() (renew, progress, heartbeat, batch int64) {
		rn, err := alice.RenewLeaseWithResponse(ctx, "t1", client.RenewRequest{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rn.StatusCode(), string(rn.Body))
		pr, err := alice.ReportProgressWithResponse(ctx, "t2", client.ProgressRequest{Message: ptr("working")})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, pr.StatusCode(), string(pr.Body))
		hb, err := alice.HeartbeatWorkerWithResponse(ctx, client.WorkerHeartbeat{Worker: "slot-1", Status: client.WorkerStatusIdle})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, hb.StatusCode(), string(hb.Body))
		resp, body := e.raw(http.MethodPost, "/v1/batch", e.token("acme", "alice"), "application/json",
			`{"ops":[{"op":"renew","id":"t1"}]}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		var b struct {
			Results []struct {
				Body struct {
					InboxUnread int64 `json:"inbox_unread"`
				} `json:"body"`
			} `json:"results"`
		}
		require.NoError(t, json.Unmarshal(body, &b))
		return rn.JSON200.InboxUnread, pr.JSON200.InboxUnread, hb.JSON200.InboxUnread, b.Results[0].Body.InboxUnread
	}
	rn, pr, hb, bt := unread()
	require.Equal(t, [4]int64{0, 0, 0, 0}, [4]int64{rn, pr, hb, bt})

	toAlice := send(t, head, client.MessageCreate{To: "alice", Body: "1"})
	send(t, head, client.MessageCreate{To: "alice", Body: "2"})
	send(t, head, client.MessageCreate{To: "node:t1", Body: "3"})
	send(t, head, client.MessageCreate{To: "node:t2", Body: "4"})
	send(t, head, client.MessageCreate{To: "node:t2", Body: "5"})
	send(t, head, client.MessageCreate{To: "bob", Body: "not alice's"})
	// renew of t1: alice's 2 + t1's 1; progress on t2: 2 + 2; heartbeat: all 5.
	rn, pr, hb, bt = unread()
	require.Equal(t, [4]int64{3, 4, 5, 3}, [4]int64{rn, pr, hb, bt})

	require.Equal(t, http.StatusOK, ack(t, alice, toAlice.ID).StatusCode())
	rn, pr, hb, bt = unread()
	require.Equal(t, [4]int64{2, 3, 4, 2}, [4]int64{rn, pr, hb, bt})
	require.Len(t, inbox(t, alice, client.ListInboxParams{Unread: ptr(true)}).Items, 4, "the heartbeat's count is the inbox's")
}

func TestMessageBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("acme", "head", "dispatcher")
	e.mustCreate(task("t1"))
	for _, tc := range []struct{ body, field string }{
		{`{"body":"x"}`, "to"},
		{`{"to":"alice"}`, "body"},
		{`{"to":"alice","body":""}`, "body"},
		{`{"to":"node:","body":"x"}`, "to"},
		{`{"to":"node:a/b","body":"x"}`, "to"},
		{`{"to":"has space","body":"x"}`, "to"},
		{`{"to":"alice","body":"x","priority":1000001}`, "priority"},
		{`{"to":"alice","body":"x","priority":-1000001}`, "priority"},
		{`{"to":"alice","body":"x","ttl_ms":0}`, "ttl_ms"},
		{`{"to":"alice","body":"x","ttl_ms":2592000001}`, "ttl_ms"},
		{`{"to":"alice","body":"x","ttl_ms":9223372036854775807}`, "ttl_ms"},
		{`{"to":"alice","body":"x","thread":""}`, "thread"},
		{`{"to":"alice","body":"x","thread":"-bad"}`, "thread"},
		{`{"to":"alice","body":"` + strings.Repeat("y", 65537) + `"}`, "body"},
		{`{"to":"alice","body":"x","unknown":1}`, ""},
		{`{"to":"alice","body":"x"} trailing`, ""},
	} {
		resp, body := e.raw(http.MethodPost, "/v1/messages", tok, "application/json", tc.body)
		if len(tc.body) > 60<<10 {
			// Over the test server's body limit before it is over the field's.
			require.Contains(t, []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge}, resp.StatusCode, string(body))
			continue
		}
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", tc.body, body)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		var p client.Problem
		require.NoError(t, json.Unmarshal(body, &p))
		require.Equal(t, client.ProblemCodeBadRequest, p.Code)
		if tc.field != "" {
			require.Equal(t, tc.field, p.Field, "%s: %s", tc.body, body)
		}
	}
	resp, body := e.raw(http.MethodPost, "/v1/messages", tok, "application/json", `{"to":"node:nope","body":"x"}`)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(body))

	alice := e.token("acme", "alice", "worker")
	for _, q := range []string{"unread=maybe", "wait_ms=-1", "wait_ms=60001", "limit=0", "limit=1001", "cursor=garbage", "thread=", "thread=a%20b", "node=", "node=a%2Fb"} {
		resp, body := e.raw(http.MethodGet, "/v1/inbox?"+q, alice, "", "")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", q, body)
	}
	resp, body = e.raw(http.MethodPost, "/v1/inbox/bad%20id/ack", alice, "application/json", "")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
	resp, body = e.raw(http.MethodPost, "/v1/inbox/some-id/ack", alice, "application/json", `{"x":1}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))

	// Nothing was sent: no inbox holds anything, the node has no message event.
	head := e.dispatcher()
	require.Empty(t, inbox(t, e.user("alice", "worker"), client.ListInboxParams{}).Items)
	e.claim(e.user("bob", "worker"), "t1")
	require.Empty(t, inbox(t, e.user("bob", "worker"), client.ListInboxParams{}).Items)
	require.NotContains(t, nodeEventTypes(t, head, "t1"), client.EventType("message_sent"))

	// A reader may not send.
	res, err := e.user("auditor", "reader").SendMessageWithResponse(context.Background(), client.MessageCreate{To: "alice", Body: "x"})
	require.NoError(t, err)
	requireProblem(t, res.ApplicationProblemJSON403, http.StatusForbidden, client.ProblemCodeForbidden)
}

func TestMessagesAreSealedPerTenant(t *testing.T) {
	t.Parallel()
	e := start(t)
	head := e.dispatcher()
	e.mustCreate(task("t1"))
	m := send(t, head, client.MessageCreate{To: "alice", Body: "acme only"})

	// The same subject in another tenant has another inbox.
	alienAlice := e.as(e.token("globex", "alice", "worker"))
	alienHead := e.as(e.token("globex", "head", "dispatcher"))
	require.Empty(t, inbox(t, alienAlice, client.ListInboxParams{}).Items)
	requireProblem(t, getMessage(t, alienHead, m.ID).ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	requireProblem(t, getMessage(t, alienAlice, m.ID).ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	requireProblem(t, ack(t, alienAlice, m.ID).ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)
	res, err := alienHead.SendMessageWithResponse(context.Background(), client.MessageCreate{To: "node:t1", Body: "x"})
	require.NoError(t, err)
	requireProblem(t, res.ApplicationProblemJSON404, http.StatusNotFound, client.ProblemCodeNotFound)

	// And the message is untouched in its own tenant.
	r := getMessage(t, head, m.ID)
	require.Equal(t, client.MessageStatePending, r.JSON200.State)
	require.Equal(t, []string{"acme only"}, bodies(inbox(t, e.user("alice", "worker"), client.ListInboxParams{})))
}

// A node that is deleted, or removed by retention, can never be held again:
// its unread messages expire with it (in the same transaction), leave every
// inbox and count, and are counted as expired; a read one stays read.
// Without this they stayed in the store and the index forever.
func TestMessagesToARemovedNodeExpire(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	admin, head, alice := e.admin(), e.dispatcher(), e.user("alice", "worker")

	// Deleted while running, one message read and one not.
	e.mustCreate(task("t1"))
	e.claim(alice, "t1")
	read := send(t, head, client.MessageCreate{To: "node:t1", Body: "read before the delete"})
	unread := send(t, head, client.MessageCreate{To: "node:t1", Body: "never read", Thread: ptr("x")})
	require.Equal(t, http.StatusOK, ack(t, alice, read.ID).StatusCode())
	require.Equal(t, []string{"never read"}, bodies(inbox(t, alice, client.ListInboxParams{Unread: ptr(true)})))
	e.clk.Advance(time.Second)
	del, err := head.DeleteNodeWithResponse(ctx, "t1", &client.DeleteNodeParams{Force: ptr(true)})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode(), string(del.Body))

	r := getMessage(t, head, unread.ID)
	require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
	require.Equal(t, client.MessageStateExpired, r.JSON200.State)
	require.True(t, r.JSON200.ExpiresAt.Equal(e.clk.Now()), "expired at the delete's instant")
	require.Nil(t, r.JSON200.ReadAt)
	r = getMessage(t, head, read.ID)
	require.Equal(t, client.MessageStateRead, r.JSON200.State, "a read message stays read")

	// Removed by retention after it finished, with a message nobody read
	// (sent after the node finished: nobody will hold it again).
	res, err := admin.PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{RetentionMS: client.Value(int64(60000))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	e.mustCreate(task("t2"))
	e.mustClaim(alice, "t2", 0)
	e.mustComplete(alice, "t2", nil)
	late := send(t, head, client.MessageCreate{To: "node:t2", Body: "too late"})
	require.Equal(t, client.MessageStatePending, getMessage(t, head, late.ID).JSON200.State)
	e.srv.Cleaner.TestSignals.Passed.Init(t)
	e.clk.Advance(2 * time.Minute) // the cleaner's timer fires on the fake clock
	require.NoError(t, e.srv.Cleaner.TestSignals.Passed.Wait(t))
	removed, err := head.GetNodeWithResponse(ctx, "t2")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, removed.StatusCode(), "the finished node was removed")
	r = getMessage(t, head, late.ID)
	require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
	require.Equal(t, client.MessageStateExpired, r.JSON200.State)

	require.Empty(t, inbox(t, alice, client.ListInboxParams{Unread: ptr(true)}).Items)
	res2, err := http.Get(e.url + "/metrics")
	require.NoError(t, err)
	defer res2.Body.Close()
	metrics, err := io.ReadAll(res2.Body)
	require.NoError(t, err)
	require.Contains(t, string(metrics), "tether_messages_expired_total 2\n")
}
