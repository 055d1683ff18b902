package etcdtest

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A three-member cluster keeps serving with one member down, stops with two
// down, and serves again, with nothing lost, once a quorum is back.
func TestClusterSurvivesAMemberAndRecoversAQuorum(t *testing.T) {
	c := Start(t, 3)
	if !c.Embedded() {
		t.Skip("external cluster")
	}
	cli := c.Client()
	ctx := context.Background()
	put := func(k string) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := cli.Put(ctx, c.Prefix()+k, "v")
		return err
	}
	if err := put("a"); err != nil {
		t.Fatal(err)
	}
	c.Kill(0)
	c.Wait(10 * time.Second)
	if err := put("b"); err != nil {
		t.Fatalf("a write with one member of three down: %v", err)
	}
	c.Kill(1)
	if err := put("c"); err == nil {
		t.Fatal("a write with two members of three down succeeded")
	}
	done := c.RestartAsync(1)
	c.Restart(0)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.Wait(20 * time.Second)
	res, err := cli.Get(ctx, c.Prefix(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if res.Count < 2 {
		t.Fatalf("after the quorum came back, %d keys (want a and b at least)", res.Count)
	}
}

// TestAPortTakenIsToldApart: start tries new ports only when a listen found
// its port taken, which is what a second listen on a bound port returns.
func TestAPortTakenIsToldApart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, err = net.Listen("tcp", l.Addr().String())
	require.Error(t, err)
	require.True(t, portTaken(err), "%v", err)
	require.False(t, portTaken(errors.New("etcd member m0 did not become ready in 60 s")))
}
