package main

// Flow control at claim time against real servers, checked by
// internal/flowcheck over the recorded history (flowcheck_load_test.go is
// the load): on Badger, one `tether serve` killed with SIGKILL and
// restarted on its data dir every couple of seconds; on etcd
// (flowcheck_etcd_test.go), the owner of the tenant's shard killed, or cut
// off from etcd and then killed, while two servers serve. No key may ever
// have more leases surely running than its limit, and no bucket may grant
// more than rate × window + burst in any window.
//
// CI runs one short run of each; `make linearize` sets
// TETHER_LINEARIZE=long; TETHER_FLOWCHECK_{RUNS,WORKERS,SECONDS} override.

import (
	"fmt"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/flowcheck"
)

func TestFlowLimitsHoldAcrossKill9(t *testing.T) {
	scale := flowScaleOf(t,
		flowScale{runs: 1, workers: 8, load: 10 * time.Second, every: 2500 * time.Millisecond},
		flowScale{runs: 3, workers: 12, load: time.Minute, every: 3 * time.Second})
	for run := range scale.runs {
		t.Run(fmt.Sprintf("run-%d", run), func(t *testing.T) {
			subs := map[string]string{"dispatcher": "dispatcher"}
			for i := range scale.workers {
				subs[fmt.Sprintf("w%02d", i)] = "worker"
			}
			c := newLinCluster(t, subs)
			reach := func(sub string, f func(*client.ClientWithResponses)) {
				c.gate.RLock()
				defer c.gate.RUnlock()
				f(c.as[int(c.turn.Add(1)%uint64(len(c.as)))][sub])
			}
			r := newFlowRun(t, reach, fmt.Sprintf("fl-%d", run))
			r.setLimits()
			restarts := 0
			r.requireHeld(r.drive(scale.workers, scale.load, scale.every, func() {
				c.restart()
				restarts++
			}))
			t.Logf("run %d: %d kill -9 restarts", run, restarts)
		})
	}
}

// TestFlowCheckCatchesAServerWithoutLimits: the same load on a server told
// no limits must break flowLimits, and the checker must say so: the real
// runs' passing is worth something only if this fails.
func TestFlowCheckCatchesAServerWithoutLimits(t *testing.T) {
	c := newLinCluster(t, map[string]string{"dispatcher": "dispatcher", "w00": "worker", "w01": "worker", "w02": "worker", "w03": "worker", "w04": "worker", "w05": "worker"})
	r := newFlowRun(t, func(sub string, f func(*client.ClientWithResponses)) { f(c.first()[sub]) }, "unlimited")
	rep := r.drive(6, 4*time.Second, 0, nil)
	if rep.OK() {
		t.Fatalf("a server without limits kept them all over the load: the load cannot catch a broken one")
	}
	rules := map[flowcheck.Rule]int{}
	for _, v := range rep.Violations {
		rules[v.Rule]++
	}
	if rules[flowcheck.RuleRunning] == 0 || rules[flowcheck.RuleRate] == 0 {
		t.Errorf("violations by rule: %v; the load must be able to break both", rules)
	}
}
