package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// Every way a run can end gives the holder's lease back to its count (EndRun
// does its own bookkeeping), so max_leases_per_identity never locks an
// identity out after its runs ended.
func TestEveryWayARunEndsFreesTheHoldersSlot(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	res, err := e.admin().PatchTenantPolicyWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, client.PolicyPatch{MaxLeasesPerIdentity: client.Value(int64(1))})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	alice, head := e.user("alice"), e.dispatcher()
	live := func() int64 { return e.srv.Leases.LiveCount("acme", "alice") }

	ends := map[string]func(id string){
		"complete": func(id string) { e.mustComplete(alice, id, nil) },
		"fail and retry": func(id string) {
			e.mustFail(alice, id, client.FailRequest{Error: "retry me"})
		},
		"fail for good": func(id string) {
			e.mustFail(alice, id, client.FailRequest{Error: "no", Requeue: ptr(false)})
		},
		"release": func(id string) {
			r, err := alice.ReleaseNodeWithResponse(ctx, id, client.ReleaseRequest{})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
		},
		"cancel": func(id string) {
			r, err := head.CancelNodeWithResponse(ctx, id, client.CancelRequest{})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), string(r.Body))
		},
		"delete with force": func(id string) {
			r, err := head.DeleteNodeWithResponse(ctx, id, &client.DeleteNodeParams{Force: ptr(true)})
			require.NoError(t, err)
			require.Equal(t, http.StatusNoContent, r.StatusCode(), string(r.Body))
		},
		"expire": func(id string) {
			e.advanceAndReap(6 * time.Second)
			require.Zero(t, live(), "the reaper settled the expiry")
		},
	}
	for name, end := range ends {
		id := "run-" + strings.ReplaceAll(name, " ", "-")
		e.mustCreate(task(id))
		e.mustClaim(alice, id, 5000)
		require.EqualValues(t, 1, live(), "%s: the claim counts", name)
		end(id)
		require.EqualValues(t, 0, live(), "%s: the ended run still counts against alice", name)
		next := "after-" + id
		e.mustCreate(task(next))
		e.mustClaim(alice, next, 5000)
		e.mustComplete(alice, next, nil)
	}
}
