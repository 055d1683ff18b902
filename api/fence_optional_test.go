package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// TestFenceIsOptionalButChecked pins down what skill.md promises: without a
// fence, renew, complete and fail act on the caller's live lease; with a
// stale fence they are 409 lease_lost and change nothing, even for the same
// identity's newer run.
func TestFenceIsOptionalButChecked(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	alice := e.user("alice")
	e.mustCreate(task("fo"))
	first := e.mustClaim(alice, "fo", 60000)
	require.EqualValues(t, 1, first.Lease.Fence)

	// No fence: the holder's own lease.
	renew, err := alice.RenewLeaseWithResponse(ctx, "fo", client.RenewRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, renew.StatusCode(), string(renew.Body))

	// The lease expires; the same identity claims again: fence 2.
	e.clk.Advance(61 * time.Second)
	second := e.mustClaim(alice, "fo", 60000)
	require.EqualValues(t, 2, second.Lease.Fence)

	// The old run's fence is refused, and changes nothing.
	stale := ptr(first.Lease.Fence)
	r, err := alice.RenewLeaseWithResponse(ctx, "fo", client.RenewRequest{Fence: stale})
	require.NoError(t, err)
	requireProblem(t, r.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	c, err := alice.CompleteNodeWithResponse(ctx, "fo", client.CompleteRequest{Fence: stale})
	require.NoError(t, err)
	requireProblem(t, c.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	f, err := alice.FailNodeWithResponse(ctx, "fo", client.FailRequest{Error: "x", Fence: stale})
	require.NoError(t, err)
	requireProblem(t, f.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeLeaseLost)
	n := e.node("fo")
	require.Equal(t, client.NodeStatusRunning, n.Status)
	require.EqualValues(t, 2, n.Lease.Fence)

	// Without a fence the call acts on the newer run: why skill.md says to
	// send it.
	done, err := alice.CompleteNodeWithResponse(ctx, "fo", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))
	require.Equal(t, client.NodeStatusDone, e.node("fo").Status)
}

// TestSkillChildExampleWorks: the child-node request skill.md shows is
// accepted from a worker holding the parent, as written.
func TestSkillChildExampleWorks(t *testing.T) {
	t.Parallel()
	e := start(t)
	guide, err := os.ReadFile("skill.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(guide), "POST /v1/nodes\n")
	require.True(t, ok, "skill.md shows no POST /v1/nodes")
	body, _, _ := strings.Cut(rest, "```")
	var req map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &req), body)
	parent, _ := req["parent"].(string)
	require.NotEmpty(t, parent)

	e.mustCreate(task(parent))
	tok := e.token("acme", "alice")
	e.mustClaim(e.as(tok), parent, 0)
	st, b := post(e, tok, "/v1/nodes", body)
	require.Equal(t, http.StatusCreated, st, string(b))
	var child struct{ Parent string }
	require.NoError(t, json.Unmarshal(b, &child))
	require.Equal(t, parent, child.Parent)
	// Not holding the parent, a worker may not.
	st, b = post(e, e.token("acme", "bob"), "/v1/nodes", body)
	require.Equal(t, http.StatusForbidden, st, string(b))
}
