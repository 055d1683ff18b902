package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

// TestCapHoldsUnderRacingFirstHeartbeats: first heartbeats of many new
// workers at once never take an identity past its cap: the count is made
// again inside the write when it is near the cap.
func TestCapHoldsUnderRacingFirstHeartbeats(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	store, err := graphstore.Open(graphstore.Options{Dir: t.TempDir(), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	reg := New(Config{Store: store, MaxPerIdentity: 10, MaxPerTenant: 1000})

	const tries = 60
	var wg sync.WaitGroup
	errs := make([]error, tries)
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = reg.Heartbeat(context.Background(), HeartbeatParams{
				Tenant: "acme", By: "alice", Worker: fmt.Sprintf("w-%02d", i), Status: StatusIdle})
		}()
	}
	wg.Wait()
	took := 0
	for _, err := range errs {
		var limited *fault.RateLimited
		switch {
		case err == nil:
			took++
		case errors.As(err, &limited):
		default:
			require.NoError(t, err)
		}
	}
	require.Equal(t, 10, took)
	views, _, err := reg.List("acme", "", MaxLimit)
	require.NoError(t, err)
	require.Len(t, views, 10)
}
