package main

// Linearizability of leases on the PostgreSQL store: two `tether serve`
// processes of a cluster over one PostgreSQL (internal/pgtest), with the
// same load and model as on etcd (linearize_etcd_faults_test.go), while
// the owner of the nodes' shard is killed with SIGKILL (and started again:
// a takeover, then a handback) or paused with SIGSTOP past its session's
// TTL (its member row expires by the database's clock, the other server
// takes the shard with a new epoch, and the paused one, resumed, must
// neither answer nor commit anything of its old epoch). CI runs one short
// run; TETHER_LINEARIZE=long five of three minutes
// (TETHER_LINEARIZE_ETCD_{RUNS,SECONDS} override either, as on etcd).
//
// Not here: TestLinearizeLeases's restart of every server at once. On
// PostgreSQL a renewal is answered before its group commits, so a kill -9
// loses the renewals of the last commits in flight (on Badger they are in
// the page cache already), the restarted server's renewal horizon is that
// much older, and a lease that lapsed in those last milliseconds comes back
// with a full TTL: what the API allows after a crash (a lease may run longer
// than its holder was told, never shorter), but not what that test's model
// of a restart allows.

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/linearize"
	"github.com/tether-run/tether/internal/pgtest"
)

// startPostgresServerAt starts a server of the cluster in database url,
// listening at addr, and waits until it is ready.
func startPostgresServerAt(t *testing.T, url, name, addr string) *proc {
	t.Helper()
	env := serverEnv(t.TempDir(), addr,
		"TETHER_STORE=postgres",
		"TETHER_POSTGRES_URL="+url,
		fmt.Sprintf("TETHER_POSTGRES_SHARDS=%d", efShards),
		fmt.Sprintf("TETHER_POSTGRES_LEASE_TTL_MS=%d", efLeaseTTL.Milliseconds()),
		"TETHER_ADVERTISE_URL=http://"+addr,
	)
	p := launch(t, name, addr, env, "serve")
	p.waitReady()
	return p
}

// TestLinearizePostgresFaults: see the top of the file.
func TestLinearizePostgresFaults(t *testing.T) {
	scale := linearizeEtcdScale(t)
	db := pgtest.Start(t)
	var total linearize.Counts
	faults := map[string]int{}
	takeovers := 0
	for run := range scale.runs {
		t.Run(fmt.Sprintf("run-%d", run), func(t *testing.T) {
			c := newLeCluster(t)
			c.pg = db.URL(t)
			c.hc = &http.Client{Transport: httpClient(t).Transport, Timeout: leCallLimit + time.Second}
			addrA, addrB := spreadAddrs(t)
			counts, f, n := c.runFaults(run, scale, scale.load, addrA, addrB,
				[]func(){c.killOwner, c.pauseOwner}, linearize.DefaultConfig(linMaxAttempts))
			total.Ops += counts.Ops
			total.Unknown += counts.Unknown
			total.Nodes += counts.Nodes
			takeovers += n
			for k, v := range f {
				faults[k] += v
			}
		})
	}
	t.Logf("%d runs on PostgreSQL: %d calls checked (%d with unknown outcome), %d nodes; faults %v; %d openings of the shard checked as restarts; 0 illegal",
		scale.runs, total.Ops, total.Unknown, total.Nodes, faults, takeovers)
}
