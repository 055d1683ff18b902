package runner

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// A runner whose claims flow control holds back does not spin (it waits in
// the server's long poll, or as Tether-Retry-After-Ms says), and claims as
// soon as the slot frees.
func TestThrottledRunnerWaitsInsteadOfSpinning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	lim, err := b.head.PutLimitWithResponse(ctx, "repo:*", client.ConcurrencyLimitPut{MaxRunning: ptrTo(int64(1))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, lim.StatusCode(), string(lim.Body))
	keys := &client.ConcurrencyKeys{"repo:acme/web"}
	b.create(client.NodeCreate{ID: ptrTo("held"), Queue: ptrTo("other"), ConcurrencyKeys: keys})
	b.create(client.NodeCreate{ID: ptrTo("waits"), Queue: ptrTo("paced"), ConcurrencyKeys: keys})
	// Someone else holds repo:acme/web's one slot.
	alice := b.srv.ClientFor("acme", "alice", "worker")
	claim, err := alice.ClaimNodeWithResponse(ctx, "held", client.ClaimRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))

	ran := make(chan string, 1)
	h := HandlerFunc(func(_ context.Context, job *Job) (any, error) {
		ran <- job.Node.ID
		return nil, nil
	})
	cfg := b.config("paced", h)
	b.start(cfg)

	// A second of being held back: a spinning slot would ask hundreds of
	// times (its backoff here is 10-50 ms); one that waits asks a few.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		select {
		case id := <-ran:
			t.Fatalf("%s ran while its key was at its limit", id)
		case <-time.After(50 * time.Millisecond):
		}
	}
	tp, err := b.head.GetQueueThroughputWithResponse(ctx, "paced")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, tp.StatusCode(), string(tp.Body))
	var throttled int64
	for _, m := range tp.JSON200.Minutes {
		throttled += m.Throttled
	}
	// The server holds a claim-next with wait_ms for a slot; a 204 it does
	// send names the throttle, and the slot waits before asking again.
	require.LessOrEqual(t, throttled, int64(25), "the runner waited between throttled claims")

	// The slot frees: the runner claims the node.
	done, err := alice.CompleteNodeWithResponse(ctx, "held", client.CompleteRequest{Fence: &claim.JSON200.Lease.Fence})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
	select {
	case id := <-ran:
		require.Equal(t, "waits", id)
	case <-time.After(waitFor + time.Minute):
		t.Fatal("the runner never claimed the node once its key had room")
	}
	b.waitStatus("waits", client.NodeStatusDone)
}
