package api_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// keyed is a queued node of queue q carrying keys.
func keyed(id, q string, keys ...string) client.NodeCreate {
	return client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr(q), ConcurrencyKeys: &keys}
}

func putLimit(t *testing.T, c *client.ClientWithResponses, key string, body client.ConcurrencyLimitPut) *client.ConcurrencyLimit {
	t.Helper()
	res, err := c.PutLimitWithResponse(context.Background(), key, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	return res.JSON200
}

func TestConcurrencyLimitRefusesAndFrees(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d, w := e.dispatcher(), e.user("w1", "worker")
	putLimit(t, d, "repo:acme/web", client.ConcurrencyLimitPut{MaxRunning: ptr(int64(1))})
	e.mustCreate(keyed("a", "cl", "repo:acme/web"))
	e.mustCreate(keyed("b", "cl", "repo:acme/web", "provider:openai"))
	e.mustCreate(keyed("c", "cl", "provider:openai"))

	a := mustClaimNext(t, w, "cl", client.ClaimNextRequest{})
	require.Equal(t, "a", a.Node.ID)
	require.Equal(t, []string{"repo:acme/web"}, *a.Node.ConcurrencyKeys)

	// By id: 409 concurrency_limited naming the key, its limit and running.
	res, err := w.ClaimNodeWithResponse(ctx, "b", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, res.ApplicationProblemJSON409, http.StatusConflict, "concurrency_limited")
	p := res.ApplicationProblemJSON409
	require.Equal(t, "repo:acme/web", p.Key)
	require.Equal(t, int64(1), *p.Limit)
	require.Equal(t, int64(1), *p.Running)

	// Claim-next skips b and takes c.
	require.Equal(t, "c", mustClaimNext(t, w, "cl", client.ClaimNextRequest{}).Node.ID)
	// Nothing else: 204 with the throttle headers.
	none := claimNext(t, w, "cl", client.ClaimNextRequest{WaitMS: ptr(int64(0))})
	require.Equal(t, http.StatusNoContent, none.StatusCode())
	require.Equal(t, `concurrency_limited; key="repo:acme/web"`, none.HTTPResponse.Header.Get("Tether-Throttled"))
	require.Equal(t, "1", none.HTTPResponse.Header.Get("Retry-After"))
	require.Equal(t, "1000", none.HTTPResponse.Header.Get("Tether-Retry-After-Ms"))

	lim, err := d.ListLimitsWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Len(t, lim.JSON200.Items, 1)
	require.Equal(t, int64(1), lim.JSON200.Items[0].Running)

	// Completing a frees the slot: b is claimed.
	done, err := w.CompleteNodeWithResponse(ctx, "a", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
	require.Equal(t, "b", mustClaimNext(t, w, "cl", client.ClaimNextRequest{}).Node.ID)

	// Removing the limit: 204, then 404.
	del, err := d.DeleteLimitWithResponse(ctx, "repo:acme/web")
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode())
	del, err = d.DeleteLimitWithResponse(ctx, "repo:acme/web")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, del.StatusCode())
}

func TestConcurrencyLimitFreedByFailReleaseCancelExpiryKeptByHandoff(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d, w := e.dispatcher(), e.user("w1", "worker")
	putLimit(t, d, "k", client.ConcurrencyLimitPut{MaxRunning: ptr(int64(1))})
	for i := range 6 {
		e.mustCreate(keyed("n"+strconv.Itoa(i), "fr", "k"))
	}
	claimOnly := func(want string) {
		t.Helper()
		require.Equal(t, want, mustClaimNext(t, w, "fr", client.ClaimNextRequest{}).Node.ID)
		require.Equal(t, http.StatusNoContent, claimNext(t, w, "fr", client.ClaimNextRequest{WaitMS: ptr(int64(0))}).StatusCode())
	}
	claimOnly("n0")
	f, err := w.FailNodeWithResponse(ctx, "n0", client.FailRequest{Error: "boom", Requeue: ptr(false)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, f.StatusCode(), string(f.Body))
	claimOnly("n1")
	r, err := w.ReleaseNodeWithResponse(ctx, "n1", client.ReleaseRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
	claimOnly("n1")
	cn, err := d.CancelNodeWithResponse(ctx, "n1", client.CancelRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, cn.StatusCode(), string(cn.Body))
	claimOnly("n2")
	// Expiry frees the slot.
	e.advanceAndReap(10 * time.Minute)
	claimOnly("n2")

	// A hand-off keeps the slot for the identity it names.
	w2 := e.user("w2", "worker")
	h, err := w.ReleaseNodeWithResponse(ctx, "n2", client.ReleaseRequest{To: ptr("w2")})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, h.StatusCode(), string(h.Body))
	require.Equal(t, http.StatusNoContent, claimNext(t, w, "fr", client.ClaimNextRequest{WaitMS: ptr(int64(0))}).StatusCode(), "the hand-off holds the slot")
	got, err := w2.ClaimNodeWithResponse(ctx, "n2", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, got.StatusCode(), string(got.Body))
	lim, err := d.ListLimitsWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), lim.JSON200.Items[0].Running)
}

func TestConcurrencyLimitHoldsUnderConcurrentClaimers(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	d := e.dispatcher()
	const limit = 3
	putLimit(t, d, "repo:*", client.ConcurrencyLimitPut{MaxRunning: ptr(int64(limit))})
	var batch []client.NodeCreate
	for i := range 60 {
		batch = append(batch, keyed("p"+strconv.Itoa(i), "cc", "repo:"+strconv.Itoa(i%2)))
	}
	res, err := d.CreateNodesBatchWithResponse(ctx, nil, client.NodeBatchCreate{Items: batch})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))

	// 32 claimers claim (by claim-next, claims, and by id), hold, and complete;
	// a shared tally of what runs per key must never pass the limit.
	var mu sync.Mutex
	running := map[string]int{}
	var over atomic.Int32
	var claimed atomic.Int32
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := e.user("w"+strconv.Itoa(i), "worker")
			for range 6 {
				var id string
				var key string
				switch i % 3 {
				case 0:
					r, err := w.ClaimNextWithResponse(ctx, "cc", client.ClaimNextRequest{WaitMS: ptr(int64(0))})
					if err != nil || r.JSON200 == nil {
						continue
					}
					id, key = r.JSON200.Node.ID, (*r.JSON200.Node.ConcurrencyKeys)[0]
				case 1:
					r, err := w.ClaimNextManyWithResponse(ctx, "cc", client.ClaimManyRequest{Max: ptr(2)})
					if err != nil || r.JSON200 == nil || len(r.JSON200.Items) == 0 {
						continue
					}
					for _, it := range r.JSON200.Items[1:] {
						_, _ = w.ReleaseNodeWithResponse(ctx, it.Node.ID, client.ReleaseRequest{})
					}
					id, key = r.JSON200.Items[0].Node.ID, (*r.JSON200.Items[0].Node.ConcurrencyKeys)[0]
				default:
					cand := "p" + strconv.Itoa((i*7)%60)
					r, err := w.ClaimNodeWithResponse(ctx, cand, client.ClaimRequest{})
					if err != nil || r.JSON200 == nil {
						continue
					}
					id, key = cand, (*r.JSON200.Node.ConcurrencyKeys)[0]
				}
				claimed.Add(1)
				mu.Lock()
				running[key]++
				if running[key] > limit {
					over.Add(1)
				}
				mu.Unlock()
				mu.Lock()
				running[key]--
				mu.Unlock()
				_, _ = w.CompleteNodeWithResponse(ctx, id, client.CompleteRequest{})
			}
		}()
	}
	wg.Wait()
	require.Zero(t, over.Load(), "a key ran past its limit")
	require.Positive(t, claimed.Load())
	lim, err := d.ListLimitsWithResponse(ctx, nil)
	require.NoError(t, err)
	require.LessOrEqual(t, lim.JSON200.Items[0].Running, int64(limit))
}
