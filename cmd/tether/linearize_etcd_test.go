package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/cluster"
	"github.com/tether-run/tether/internal/etcdtest"
	"github.com/tether-run/tether/internal/linearize"
)

// newLinEtcdCluster is two servers over a three-member etcd cluster of its
// own; calls go through either (one owns the tenant's shard, the other
// forwards to it). It is never restarted: a kill on etcd is a change of
// owner, which the etcd fault tests drive.
func newLinEtcdCluster(t *testing.T, subs map[string]string) *linCluster {
	etcd := etcdtest.Start(t, 3)
	return newLinClusterOf(t, subs, false, func(int) []*proc {
		servers := []*proc{startEtcdServer(t, etcd, "A"), startEtcdServer(t, etcd, "B")}
		waitSettledOwner(t, servers, "acme")
		return servers
	})
}

// waitSettledOwner waits until tenant's shard is served by the server
// placement wants, so that no handover interrupts the load: the first
// server up takes every shard, and hands over those the second is the
// desired owner of once that one joins.
func waitSettledOwner(t *testing.T, servers []*proc, tenant string) {
	t.Helper()
	hc := httpClient(t)
	urls := make([]string, len(servers))
	for i, p := range servers {
		urls[i] = p.url
	}
	want := cluster.Placement(urls, cluster.ShardOfTenant(tenant, efShards))
	var wantID string
	for _, p := range servers {
		if p.url == want {
			wantID = serverID(t, hc, p)
		}
	}
	probe := mint(t, "probe", "reader")
	deadline := time.Now().Add(30 * time.Second)
	for {
		settled := true
		for _, p := range servers {
			res, err := p.as(hc, probe).ListEventsWithResponse(context.Background(), nil)
			if err != nil || res.HTTPResponse.Header.Get(efServedBy) != wantID {
				settled = false
			}
		}
		if settled {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenant %s is not served by %s (%s) after 30 s", tenant, want, wantID)
		}
		time.Sleep(50 * time.Millisecond) // a handover in progress
	}
}

// TestLinearizeLeasesEtcd is TestLinearizeLeases on etcd, without faults:
// the same load, through two servers, checked by the same model (a read
// after a renewal's answer shows it, on this store too).
func TestLinearizeLeasesEtcd(t *testing.T) {
	scale := linearizeScale(t)
	var total linearize.Counts
	for run := range scale.runs {
		t.Run(fmt.Sprintf("run-%d", run), func(t *testing.T) {
			counts := linearizeRun(t, run, scale, newLinEtcdCluster)
			total.Ops += counts.Ops
			total.Unknown += counts.Unknown
			total.Nodes += counts.Nodes
		})
	}
	t.Logf("%d runs on etcd: %d calls checked (%d with unknown outcome), %d nodes; 0 illegal",
		scale.runs, total.Ops, total.Unknown, total.Nodes)
}
