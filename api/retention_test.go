package api_test

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

	// The cleaner's timer fires on the fake clock; its signal says the
	// pass (nodes, then event groups) is done.
	e.srv.Cleaner.TestSignals.Passed.Init(t)
	e.clk.Advance(2 * time.Minute)
	require.NoError(t, e.srv.Cleaner.TestSignals.Passed.Wait(t))
	for _, id := range []string{"a", "b", "c"} {
		r, err := head.GetNodeWithResponse(ctx, id)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, r.StatusCode(), id)
	}
	live, err := head.GetNodeWithResponse(ctx, "waiting")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, live.StatusCode(), "a queued node is never removed")

	late, err := head.ListEventsWithResponse(ctx, &client.ListEventsParams{After: ptr(cursor)})
	require.NoError(t, err)
	require.Equal(t, http.StatusGone, late.StatusCode(), "events before the horizon answer 410: %s", late.Body)
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

	fresh, err := head.ListEventsWithResponse(ctx, &client.ListEventsParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, fresh.StatusCode(), string(fresh.Body))
	require.Empty(t, fresh.JSON200.Items, "every event happened more than a minute ago")
	e.mustCreate(task("d"))
	next, err := head.ListEventsWithResponse(ctx, &client.ListEventsParams{})
	require.NoError(t, err)
	require.Len(t, next.JSON200.Items, 1)
	require.Equal(t, *gone.OldestSeq, next.JSON200.Items[0].Seq, "seqs go on from the horizon, never reused")

	again, err := head.ListEventsWithResponse(ctx, &client.ListEventsParams{After: ptr(*gone.OldestSeq - 1)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, again.StatusCode(), "a cursor at the horizon loses nothing: %s", again.Body)
}
