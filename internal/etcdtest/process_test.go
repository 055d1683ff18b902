package etcdtest_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/tether-run/tether/internal/etcdtest"
	"github.com/tether-run/tether/internal/netfault"
	"github.com/tether-run/tether/internal/testskip"
)

// Three member processes, each in a namespace of its own: the leader cut
// off from the other two loses its place, the two go on writing, and once
// healed the old leader serves what they wrote; a killed member restarts
// from its data.
func TestProcessMembersSplitAndHeal(t *testing.T) {
	t.Parallel()
	n := netfault.New(t)
	testskip.Programs(t, "etcd") // Debian: apt-get install etcd-server; .ci/run installs it
	hosts := []*netfault.Host{n.Host("etcd0"), n.Host("etcd1"), n.Host("etcd2")}
	var places []etcdtest.Place
	for _, h := range hosts {
		places = append(places, etcdtest.Place{IP: h.IP, Command: h.Command})
	}
	dial := func(ctx context.Context, addr string) (net.Conn, error) { return n.DialContext(ctx, "tcp", addr) }
	c := etcdtest.StartProcesses(t, dial, places...)
	cli := c.Client()
	ctx := context.Background()

	leader := leaderOf(t, c, cli)
	var others []*netfault.Host
	for i, h := range hosts {
		if i != leader {
			others = append(others, h)
		}
	}
	heal := hosts[leader].Cut(netfault.Both, others...)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := cli.Put(ctx, c.Prefix()+"k", "written by the majority")
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "the two members did not go on without the leader")
	alone, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Endpoints[leader]}, DialTimeout: time.Second, DialOptions: []grpc.DialOption{grpc.WithContextDialer(dial)}})
	require.NoError(t, err)
	defer alone.Close()
	short, cancel := context.WithTimeout(ctx, time.Second)
	_, err = alone.Get(short, c.Prefix()+"k")
	cancel()
	require.Error(t, err, "the member cut off alone answered a linearizable read")
	heal()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		res, err := alone.Get(ctx, c.Prefix()+"k")
		return err == nil && len(res.Kvs) == 1
	}, 20*time.Second, 50*time.Millisecond, "the healed member did not serve the majority's write")

	c.Kill(leader)
	c.Restart(leader)
	res, err := alone.Get(ctx, c.Prefix()+"k")
	require.NoError(t, err)
	require.Equal(t, "written by the majority", string(res.Kvs[0].Value))
}

// leaderOf is the index of the member that says it leads.
func leaderOf(t *testing.T, c *etcdtest.Cluster, cli *clientv3.Client) int {
	t.Helper()
	for i, ep := range c.Endpoints {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err == nil && st.Header.MemberId == st.Leader {
			return i
		}
	}
	t.Fatal("no member says it leads")
	return -1
}
