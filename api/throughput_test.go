package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// A queue's last hour counts what was created, completed and failed, minute
// by minute, on the server's clock.
func TestQueueThroughput(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	w := e.user("w1", "worker")
	for _, id := range []string{"a", "b", "c"} {
		e.mustCreate(client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("mail")})
	}
	e.mustCreate(client.NodeCreate{ID: ptr("other-q"), Type: "task", Queue: ptr("sms")})
	e.mustClaim(w, "a", 0)
	e.mustComplete(w, "a", nil)
	e.mustClaim(w, "b", 0)
	e.mustFail(w, "b", client.FailRequest{Error: "smtp 451"})

	get := func(queue string) client.QueueThroughput {
		t.Helper()
		res, err := e.dispatcher().GetQueueThroughputWithResponse(ctx, queue)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Len(t, res.JSON200.Minutes, 60)
		return *res.JSON200
	}
	now := get("mail").Minutes[59]
	require.Equal(t, [3]int64{3, 1, 1}, [3]int64{now.Created, now.Completed, now.Failed})
	require.Equal(t, e.clk.Now().UTC().Truncate(time.Minute), now.At.UTC())

	// Two minutes on, the new minute is last and the old one moved back two.
	e.clk.Advance(2 * time.Minute)
	e.mustCreate(client.NodeCreate{ID: ptr("d"), Type: "task", Queue: ptr("mail")})
	got := get("mail")
	require.Equal(t, int64(1), got.Minutes[59].Created)
	require.Equal(t, int64(3), got.Minutes[57].Created)
	require.Zero(t, got.Minutes[58].Created)
	require.False(t, got.Shared)

	// An hour later the old minutes are gone.
	e.clk.Advance(61 * time.Minute)
	for _, m := range get("mail").Minutes {
		require.Zero(t, m.Created+m.Completed+m.Failed, m.At)
	}
	// A queue never used is all zeros; a bad name is 400.
	require.Zero(t, get("never").Minutes[59].Created)
	resp, b := e.raw(http.MethodGet, "/v1/queues/bad%20name/throughput", e.token("acme", "head", "dispatcher"), "", "")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
}
