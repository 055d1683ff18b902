package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// TestDefaultRetryBackoffFollowsTenantPolicy: a node created without a
// backoff takes the tenant's (retry_initial_ms, retry_max_ms, factor 2); a
// failed run waits it with equal jitter; retry_initial_ms 0 retries at once;
// a policy whose max is below its initial is refused and changes nothing.
func TestDefaultRetryBackoffFollowsTenantPolicy(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	admin, alice := e.admin(), e.user("alice")
	patch := func(p client.PolicyPatch) *client.PatchTenantPolicyResponse {
		t.Helper()
		res, err := admin.PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, p)
		require.NoError(t, err)
		return res
	}

	res := patch(client.PolicyPatch{RetryInitialMS: client.Value(int64(2000)), RetryMaxMS: client.Value(int64(5000))})
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.EqualValues(t, 2000, res.JSON200.RetryInitialMS)

	n := e.mustCreate(task("r1"))
	require.Equal(t, &client.Backoff{InitialMS: 2000, MaxMS: 5000, Factor: 2}, n.Backoff)
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 5 * time.Second} {
		e.mustClaim(alice, "r1", 0)
		f := e.mustFail(alice, "r1", client.FailRequest{Error: "flaky"})
		require.NotNil(t, f.Node.RunAt, "failure %d", i+1)
		wait := f.Node.RunAt.Sub(e.clk.Now())
		requireBetween(t, wait, want/2, want)
		e.clk.Advance(wait)
	}

	// A node's own backoff wins over the tenant's.
	own := e.mustCreate(client.NodeCreate{ID: ptr("r2"), Type: "task", Queue: ptr("default"),
		Backoff: &client.Backoff{InitialMS: 100, MaxMS: 100, Factor: 1}})
	require.EqualValues(t, 100, own.Backoff.InitialMS)

	// retry_initial_ms 0: no default backoff, failed runs come back at once.
	res = patch(client.PolicyPatch{RetryInitialMS: client.Value(int64(0))})
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	n = e.mustCreate(task("r3"))
	require.Nil(t, n.Backoff)
	e.mustClaim(alice, "r3", 0)
	f := e.mustFail(alice, "r3", client.FailRequest{Error: "x"})
	require.Nil(t, f.Node.RunAt)
	require.True(t, f.Node.Ready)

	// Max below initial: 400 naming the field, with the bound in words.
	before := patch(client.PolicyPatch{}).JSON200
	res = patch(client.PolicyPatch{RetryInitialMS: client.Value(int64(7_200_000))})
	requireProblem(t, res.ApplicationProblemJSON400, http.StatusBadRequest, client.ProblemCodeBadRequest)
	require.Equal(t, "retry_initial_ms", res.ApplicationProblemJSON400.Field)
	require.Contains(t, res.ApplicationProblemJSON400.Detail, "retry_max_ms: 5000 (5s)")
	require.Equal(t, before, patch(client.PolicyPatch{}).JSON200, "a refused patch changes nothing")

	// null restores the server default.
	res = patch(client.PolicyPatch{RetryInitialMS: client.Null[int64](), RetryMaxMS: client.Null[int64]()})
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.EqualValues(t, 5000, res.JSON200.RetryInitialMS)
	require.EqualValues(t, 600000, res.JSON200.RetryMaxMS)
}
