package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// With retention_ms set, finished nodes and old events go once the clock
// passes it; live nodes stay; a cursor behind what went gets 410 gone with
// the oldest seq kept, never a silent gap; seqs go on.
func TestRetentionRemovesFinishedWorkAndSaysSoToLateReaders(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	admin, head, w := e.admin(), e.dispatcher(), e.user("w1")
	res, err := admin.PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{RetentionMS: client.Value(int64(60000))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.EqualValues(t, 60000, res.JSON200.RetentionMS)

	for _, id := range []string{"a", "b", "c"} {
		e.mustCreate(task(id))
		e.mustClaim(w, id, 0)
		e.mustComplete(w, id, nil)
	}
	e.mustCreate(task("waiting"))
	first, err := head.ListEventsWithResponse(ctx, &client.ListEventsParams{Limit: ptr(client.Limit(1))})
	require.NoError(t, err)
	cursor := first.JSON200.Items[0].Seq

	e.clk.Advance(2 * time.Minute) // the cleaner's timer fires on the fake clock
	require.Eventually(t, func() bool {
		r, err := head.GetNodeWithResponse(ctx, "a")
		return err == nil && r.StatusCode() == http.StatusNotFound
	}, 10*time.Second, 10*time.Millisecond, "the finished nodes were removed")
	for _, id := range []string{"b", "c"} {
		r, err := head.GetNodeWithResponse(ctx, id)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, r.StatusCode(), id)
	}
	live, err := head.GetNodeWithResponse(ctx, "waiting")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, live.StatusCode(), "a queued node is never removed")

	// The cleaner removes a batch's nodes, then (in a second transaction) the
	// event groups past the cutoff: the horizon may move just after "a" is gone.
	var late *client.ListEventsResponse
	require.Eventually(t, func() bool {
		late, err = head.ListEventsWithResponse(ctx, &client.ListEventsParams{After: ptr(cursor)})
		return err == nil && late.StatusCode() == http.StatusGone
	}, 10*time.Second, 10*time.Millisecond, "events before the horizon answer 410")
	gone := late.ApplicationProblemJSON410
	requireProblem(t, gone, http.StatusGone, client.ProblemCodeGone)
	require.NotNil(t, gone.OldestSeq)
	require.Greater(t, *gone.OldestSeq, cursor)

	nodeLate, err := head.ListNodeEventsWithResponse(ctx, "waiting", &client.ListNodeEventsParams{After: ptr(cursor)})
	require.NoError(t, err)
	require.Equal(t, http.StatusGone, nodeLate.StatusCode(), string(nodeLate.Body))

	resp, body := e.rawWithHeaders(http.MethodGet, "/v1/events", e.token("acme", "head", "dispatcher"), "",
		map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "1"})
	require.Equal(t, http.StatusGone, resp.StatusCode, string(body))

	// The cleaner removes events in passes of their own, after the nodes:
	// on a busy machine the last may still be running.
	require.Eventually(t, func() bool {
		fresh, err := head.ListEventsWithResponse(ctx, &client.ListEventsParams{})
		return err == nil && fresh.StatusCode() == http.StatusOK && len(fresh.JSON200.Items) == 0
	}, 10*time.Second, 10*time.Millisecond, "every event happened more than a minute ago")
	e.mustCreate(task("d"))
	next, err := head.ListEventsWithResponse(ctx, &client.ListEventsParams{})
	require.NoError(t, err)
	require.Len(t, next.JSON200.Items, 1)
	require.Equal(t, *gone.OldestSeq, next.JSON200.Items[0].Seq, "seqs go on from the horizon, never reused")

	again, err := head.ListEventsWithResponse(ctx, &client.ListEventsParams{After: ptr(*gone.OldestSeq - 1)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, again.StatusCode(), "a cursor at the horizon loses nothing: %s", again.Body)
}
