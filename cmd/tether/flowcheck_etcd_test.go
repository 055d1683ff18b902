package main

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
)

// TestFlowLimitsHoldAcrossOwnerKills: the flow-control load of
// flowcheck_load_test.go through two servers over a three-member etcd
// cluster, while the owner of the tenant's shard is killed with SIGKILL
// (and started again), or cut off from etcd and then killed. Each new
// owner starts from the stored limits and the running leases, with empty
// buckets.
func TestFlowLimitsHoldAcrossOwnerKills(t *testing.T) {
	scale := flowScaleOf(t,
		flowScale{runs: 1, workers: 8, load: 30 * time.Second, every: leGap},
		flowScale{runs: 3, workers: 12, load: 2 * time.Minute, every: leGap})
	for run := range scale.runs {
		t.Run(fmt.Sprintf("run-%d", run), func(t *testing.T) {
			c := newLeEtcdCluster(t)
			subs := []string{"dispatcher"}
			c.toks["dispatcher"] = mintTenant(t, c.tenant, "dispatcher", "dispatcher")
			for i := range scale.workers {
				sub := fmt.Sprintf("w%02d", i)
				subs = append(subs, sub)
				c.toks[sub] = mintTenant(t, c.tenant, sub, "worker")
			}
			c.toks["auditor"] = mintTenant(t, c.tenant, "auditor", "reader")
			reach := func(sub string, f func(*client.ClientWithResponses)) {
				srv := c.servers()
				f(srv[rand.IntN(len(srv))].as(c.hc, c.toks[sub]))
			}
			r := newFlowRun(t, reach, fmt.Sprintf("fe-%d", run))
			r.setLimits()
			faults := []func(){c.killOwner, c.cutAndKillOwner}
			k := 0
			r.requireHeld(r.drive(scale.workers, scale.load, scale.every, func() {
				faults[k%len(faults)]()
				k++
			}))
			t.Logf("run %d on etcd: tenant %s; faults %v", run, c.tenant, c.faults)
			if k == 0 {
				t.Errorf("no owner was killed: the run tested no takeover")
			}
		})
	}
}
