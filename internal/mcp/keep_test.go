package mcp_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/mcp"
)

// renewals is an OnRenew hook that signals each renewal of a node.
func renewals() (func(string, client.RenewResponse), <-chan string) {
	ch := make(chan string, 64)
	return func(id string, _ client.RenewResponse) {
		select {
		case ch <- id:
		default:
		}
	}, ch
}

func waitRenewal(t *testing.T, ch <-chan string, id string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-ch:
			if got == id {
				return
			}
		case <-timeout:
			t.Fatalf("no renewal of %s", id)
		}
	}
}

// drain empties ch, so that the next waitRenewal sees a renewal made after it.
func drain(ch <-chan string) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func TestKeeperRenewsUntilTheLeaseEnds(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.queued("k-1", "q")
	onRenew, renewed := renewals()
	cs := e.stdio(e.token("agent"), mcp.Options{Keep: []client.KeepOption{client.KeepInterval(5 * time.Millisecond)}, OnRenew: onRenew})

	claim := ok(t, call(t, cs, "claim_next", map[string]any{"queue": "q"}))
	fence := claim["lease"].(map[string]any)["fence"]
	waitRenewal(t, renewed, "k-1")
	waitRenewal(t, renewed, "k-1")

	// A fail the API refuses (400: a negative retry delay) leaves the lease
	// live, so the keeper goes on renewing it.
	toolError(t, call(t, cs, "fail", map[string]any{"node_id": "k-1", "error": "x", "retry_in_ms": -1}), 400, "bad_request")
	drain(renewed)
	waitRenewal(t, renewed, "k-1")

	// The fence defaults to the kept lease's; release ends the lease.
	rel := ok(t, call(t, cs, "release", map[string]any{"node_id": "k-1", "reason": "not mine"}))
	require.Equal(t, "queued", rel["status"])

	// Claimed again (by this agent), it has a new fence: the session keeps
	// the new lease, and a stale fence is refused as lease_lost.
	again := ok(t, call(t, cs, "claim_next", map[string]any{"queue": "q"}))
	require.NotEqual(t, fence, again["lease"].(map[string]any)["fence"])
	toolError(t, call(t, cs, "complete", map[string]any{"node_id": "k-1", "fence": fence}), 409, "lease_lost")
	drain(renewed)
	waitRenewal(t, renewed, "k-1") // the refused complete did not stop the keeper
	e.queued("k-2", "q")
	done := ok(t, call(t, cs, "complete", map[string]any{"node_id": "k-1", "next": map[string]any{"queue": "q"}}))
	require.Equal(t, "done", done["status"])
	// The node claimed with the completion is kept too.
	next, _ := done["claimed"].(map[string]any)
	require.NotNil(t, next, "complete with next claims k-2: %v", done)
	require.Equal(t, "k-2", next["node"].(map[string]any)["id"])
	require.Equal(t, true, next["lease"].(map[string]any)["kept"])
	drain(renewed)
	waitRenewal(t, renewed, "k-2")
	last := ok(t, call(t, cs, "complete", map[string]any{"node_id": "k-2", "next": map[string]any{"queue": "q"}}))
	require.Equal(t, false, last["claimed"].(map[string]any)["claimed"], "nothing left: %v", last)
	require.Contains(t, last["next"], "claim_next", "the hint says what to call")
}

// Without a valid token every tool answers the 401 as a tool error whose
// hint says how to set one; nothing is kept.
func TestToolsWithoutATokenAreToolErrors(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.queued("u-1", "q")
	cs := e.stdio("not-a-token", mcp.Options{})
	te := toolError(t, call(t, cs, "claim_next", map[string]any{"queue": "q"}), 401, "unauthorized")
	require.Contains(t, te["hint"], "TETHER_TOKEN")
	toolError(t, call(t, cs, "get_node", map[string]any{"node_id": "u-1"}), 401, "unauthorized")
}
