package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// TestReadAfterRenewShowsTheRenewal: a read that starts after a
// renewal's answer shows the renewed expiry, never an older one. Workers
// each hold a node and, many times over and all at once, renew it (the fake
// clock a millisecond on, so every renewal moves the expiry) and then read it
// back: the node (GET /v1/nodes/{id}) and the identity's leases (GET
// /v1/leases). Before renewals were shown to readers once applied, a read
// often came before the renewal's group commit and showed the previous
// expiry.
func TestReadAfterRenewShowsTheRenewal(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	const workers, rounds = 12, 100
	var reads, stale atomic.Int64
	var firstStale sync.Once
	var wg sync.WaitGroup
	for w := range workers {
		id := fmt.Sprintf("rv-%02d", w)
		e.mustCreate(task(id))
		sub := fmt.Sprintf("worker-%02d", w)
		c := e.user(sub)
		claim, err := c.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{TTLMS: ptr(int64(600000))})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))
		fence := ptr(claim.JSON200.Lease.Fence)
		wg.Add(1)
		go func() {
			defer wg.Done()
			check := func(what string, expires, renewed int64) {
				reads.Add(1)
				if expires < renewed {
					stale.Add(1)
					firstStale.Do(func() {
						t.Logf("first stale read: %s shows expires %d, %d ms before the renewal answered just before it", what, expires, renewed-expires)
					})
				}
			}
			for i := range rounds {
				e.clk.Advance(time.Millisecond)
				renew, err := c.RenewLeaseWithResponse(ctx, id, client.RenewRequest{Fence: fence})
				if err != nil {
					t.Errorf("renew %s: %v", id, err)
					return
				}
				if renew.JSON200 == nil {
					t.Errorf("renew %s: %d %s", id, renew.StatusCode(), renew.Body)
					return
				}
				renewed := renew.JSON200.Lease.Expires
				got, err := c.GetNodeWithResponse(ctx, id)
				if err != nil {
					t.Errorf("read %s: %v", id, err)
					return
				}
				if got.JSON200 == nil || got.JSON200.Lease == nil {
					t.Errorf("read %s: %d %s", id, got.StatusCode(), got.Body)
					return
				}
				check("GET /v1/nodes/"+id, got.JSON200.Lease.Expires, renewed)
				if i%5 != 0 {
					continue
				}
				list, err := c.ListLeasesWithResponse(ctx, &client.ListLeasesParams{Holder: ptr(sub)})
				if err != nil {
					t.Errorf("list %s's leases: %v", sub, err)
					return
				}
				if list.JSON200 == nil || len(list.JSON200.Items) != 1 {
					t.Errorf("list %s's leases: %d %s", sub, list.StatusCode(), list.Body)
					return
				}
				check("GET /v1/leases?holder="+sub, list.JSON200.Items[0].Expires, renewed)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d reads right after a renewal's answer (%d workers × %d renewals); %d showed an older expiry", reads.Load(), workers, rounds, stale.Load())
	require.Positive(t, reads.Load())
	require.Zero(t, stale.Load(), "reads that began after a renewal's answer showed the expiry from before it")
}
