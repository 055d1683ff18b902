package queuemetrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

// TestClaimThrottledCountsPerReasonWithinTheCaps: each throttled claim is
// counted under its reason, in the queue's series (folded into "other"
// past the caps, as every per-queue series is) and in the tenant's own
// throughput history, never another tenant's.
func TestClaimThrottledCountsPerReasonWithinTheCaps(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	store, err := graphstore.Open(graphstore.Options{Dir: t.TempDir(), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	m := New(store, Limits{MaxTenants: 1, MaxQueues: 1})
	reg := prometheus.NewRegistry()
	require.NoError(t, m.Register(reg))

	m.ClaimThrottled("acme", "fixes", fault.ThrottleConcurrency)
	m.ClaimThrottled("acme", "fixes", fault.ThrottleConcurrency)
	m.ClaimThrottled("acme", "fixes", fault.ThrottleRate)
	m.ClaimThrottled("acme", "crawl", fault.ThrottleBudget)  // past acme's queue cap
	m.ClaimThrottled("zebra", "fixes", fault.ThrottleBudget) // past the tenant cap
	m.ClaimThrottled("acme", "fixes", "made_up_reason")      // never a series of its own

	got := map[string]float64{}
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "tether_claims_throttled_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range mt.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			got[fmt.Sprintf("%s/%s/%s", l["tenant"], l["queue"], l["reason"])] = mt.GetCounter().GetValue()
		}
	}
	require.Equal(t, map[string]float64{
		"acme/fixes/concurrency_limited": 2,
		"acme/fixes/start_rate_limited":  1,
		"acme/fixes/other":               1,
		"acme/other/budget_exhausted":    1,
		"other/other/budget_exhausted":   1,
	}, got)

	throttled := func(tenant, queue string) (n int64) {
		minutes, _ := m.Throughput(tenant, queue)
		for _, mn := range minutes {
			n += mn.Throttled
		}
		return n
	}
	require.EqualValues(t, 4, throttled("acme", "fixes"), "the history counts every reason")
	require.EqualValues(t, 1, throttled("zebra", "fixes"), "zebra reads its own count, whatever the label caps fold")
	minutes, _ := m.Throughput("acme", "fixes")
	require.EqualValues(t, 4, minutes[len(minutes)-1].Throttled, "in the current minute")
	require.EqualValues(t, 0, minutes[len(minutes)-1].Created)
}
