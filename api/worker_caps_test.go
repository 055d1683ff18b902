package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/server"
)

// TestWorkerRowsAreCapped: one identity, and one tenant, hold at most their
// cap of workers; the first heartbeat of one more is a 429 that stores
// nothing, while the workers already listed go on, and a worker forgotten
// makes room again.
func TestWorkerRowsAreCapped(t *testing.T) {
	t.Parallel()
	e := start(t, func(c *server.Config) { c.WorkerMaxPerIdentity, c.WorkerMaxPerTenant = 3, 5 })
	alice, bob, carol := e.user("alice", "worker"), e.user("bob", "worker"), e.user("carol", "worker")
	for i := range 3 {
		heartbeat(t, alice, client.WorkerHeartbeat{Worker: fmt.Sprintf("a-%d", i), Status: client.WorkerStatusIdle})
	}
	refused := func(c *client.ClientWithResponses, name, says string) {
		t.Helper()
		res, err := c.HeartbeatWorkerWithResponse(t.Context(), client.WorkerHeartbeat{Worker: name, Status: client.WorkerStatusIdle})
		require.NoError(t, err)
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode(), string(res.Body))
		requireProblem(t, res.ApplicationProblemJSON429, http.StatusTooManyRequests, client.ProblemCodeRateLimited)
		require.Contains(t, string(res.Body), says)
	}
	refused(alice, "a-3", "the most one identity may hold")
	// Those listed go on: a heartbeat of a known worker is no new row.
	heartbeat(t, alice, client.WorkerHeartbeat{Worker: "a-0", Status: client.WorkerStatusWorking})

	heartbeat(t, bob, client.WorkerHeartbeat{Worker: "b-0", Status: client.WorkerStatusIdle})
	heartbeat(t, bob, client.WorkerHeartbeat{Worker: "b-1", Status: client.WorkerStatusIdle})
	refused(carol, "c-0", "the most one tenant may hold")
	require.Len(t, workers(t, alice), 5, "nothing refused was stored")

	// Another tenant has room of its own.
	heartbeat(t, e.as(e.token("globex", "carol", "worker")), client.WorkerHeartbeat{Worker: "c-0", Status: client.WorkerStatusIdle})

	// A worker that says offline is forgotten after the offline retention,
	// and its row no longer counts.
	heartbeat(t, alice, client.WorkerHeartbeat{Worker: "a-2", Status: client.WorkerStatusOffline})
	e.clk.Advance(e.srv.Workers.OfflineRetention())
	heartbeat(t, alice, client.WorkerHeartbeat{Worker: "a-3", Status: client.WorkerStatusIdle})
	require.Len(t, workers(t, alice), 5)
}
