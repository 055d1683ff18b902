package api_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

var millisStamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`)

// TestTimesHaveOnePrecision: the extended and failed events and a conflict's
// detail carry times as the API's fields do, to the millisecond.
func TestTimesHaveOnePrecision(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	alice, bob := e.user("alice"), e.user("bob")
	e.clk.Advance(123456789 * time.Nanosecond) // a clock with sub-millisecond digits
	e.mustCreate(task("p1"))
	claim := e.mustClaim(alice, "p1", 0)

	ext, err := alice.ExtendLeaseWithResponse(ctx, "p1", client.ExtendRequest{MS: 60000})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ext.StatusCode(), string(ext.Body))
	evs := e.nodeEvents("p1")
	last := evs[len(evs)-1]
	require.Equal(t, client.EventTypeExtended, last.Type)
	stamp, _ := last.Data["expires_at"].(string)
	require.Regexp(t, "^"+millisStamp.String()+"$", stamp)
	require.Equal(t, ext.JSON200.Lease.ExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"), stamp)

	res, err := bob.ClaimNodeWithResponse(ctx, "p1", client.ClaimRequest{})
	require.NoError(t, err)
	requireProblem(t, res.ApplicationProblemJSON409, http.StatusConflict, client.ProblemCodeConflict)
	found := millisStamp.FindString(res.ApplicationProblemJSON409.Detail)
	require.NotEmpty(t, found, "the detail names the expiry to the millisecond: %s", res.ApplicationProblemJSON409.Detail)
	require.NotRegexp(t, `\.\d{4,}Z`, res.ApplicationProblemJSON409.Detail)

	f := e.mustFail(alice, "p1", client.FailRequest{Error: "x", Fence: ptr(claim.Lease.Fence)})
	evs = e.nodeEvents("p1")
	for _, ev := range evs {
		if ev.Type == client.EventTypeFailed {
			require.Equal(t, f.Node.RunAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"), ev.Data["run_at"])
		}
	}
}
