package kv

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether-run/tether/internal/fault"
)

// pipelineRig holds the first pipelined transaction after arm before it is
// sent, until two later ones have reached etcd and been refused for
// overtaking it (the chain short of them); then it lets it go, through
// change.
type pipelineRig struct {
	armed  chan struct{} // closed by arm
	first  chan int64    // the held transaction's chain version
	short  chan int64    // each later one refused for overtaking
	resume chan struct{} // lets the held one go
	change func([]clientv3.Op) []clientv3.Op
	held   atomic.Bool
}

func newPipelineRig() *pipelineRig {
	return &pipelineRig{armed: make(chan struct{}), first: make(chan int64, 1), short: make(chan int64, 16), resume: make(chan struct{})}
}

func (r *pipelineRig) hook(step string, t *chainedTxn) {
	select {
	case <-r.armed:
	default:
		return
	}
	switch step {
	case "send":
		if !r.held.CompareAndSwap(false, true) {
			return // not the held one
		}
		r.first <- t.ver
		<-r.resume
		if r.change != nil {
			t.ops = r.change(t.ops)
		}
	case "short":
		r.short <- t.ver
	}
}

// overtake writes three keys, each in a group of its own and each reading
// the one before: the first is held before it is sent while the other two
// reach etcd ahead of it. It returns the three Updates' errors.
func overtake(t *testing.T, s *Store, rig *pipelineRig) []error {
	t.Helper()
	ctx := context.Background()
	close(rig.armed)
	errs := make([]chan error, 3)
	for i := range errs {
		errs[i] = make(chan error, 1)
		go func() {
			errs[i] <- s.Update(ctx, func(tx *Txn) error {
				if i > 0 {
					prev, ok, err := tx.Get(fmt.Appendf(nil, "chain/%d", i-1))
					if err != nil {
						return err
					}
					require.True(t, ok, "write %d reads write %d", i, i-1)
					return tx.Set(fmt.Appendf(nil, "chain/%d", i), append(prev, '+'))
				}
				return tx.Set([]byte("chain/0"), []byte("v"))
			})
		}()
		if i == 0 {
			<-rig.first
		} else {
			<-rig.short
		}
	}
	close(rig.resume)
	out := make([]error, 3)
	for i, ch := range errs {
		out[i] = <-ch
	}
	return out
}

// Transactions that reach etcd ahead of the one before them do not commit
// ahead of it: each is refused by the chain, waits for its predecessor and
// commits after it, so etcd ends with every write, in the writer's order.
func TestEtcdPipelineKeepsTheWritersOrder(t *testing.T) {
	t.Parallel()
	c := sharedEtcd(t)
	cli := etcdClient(t, c)
	opts := EtcdOptions{Client: cli, Prefix: storePrefix(c, "pipe-order"), Pipeline: 4}
	rig := newPipelineRig()
	s := openEtcdHooked(t, opts, func(e *etcdEngine) { e.chainHook = rig.hook })
	defer s.Close()

	for i, err := range overtake(t, s, rig) {
		require.NoError(t, err, "write %d", i)
	}
	require.EqualValues(t, 2, s.Stats().Reordered.Load())
	resp, err := cli.Get(context.Background(), opts.Prefix+"d/chain/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 3)
	for i, kv := range resp.Kvs {
		if i > 0 {
			require.Less(t, resp.Kvs[i-1].ModRevision, kv.ModRevision, "chain/%d commits after chain/%d", i, i-1)
		}
	}
	v, ok := get(t, s, "chain/2")
	require.True(t, ok)
	require.Equal(t, "v++", string(v))
}

// A transaction that fails takes the later ones down with it: they reached
// etcd first and were refused, and once it failed (etcd refused it: a key
// put twice), none of them commits or is acknowledged; the store breaks
// and etcd holds none of the three writes.
func TestEtcdPipelineFailureTakesTheLaterTransactionsDown(t *testing.T) {
	t.Parallel()
	c := sharedEtcd(t)
	cli := etcdClient(t, c)
	opts := EtcdOptions{Client: cli, Prefix: storePrefix(c, "pipe-fail"), Pipeline: 4}
	rig := newPipelineRig()
	rig.change = func(ops []clientv3.Op) []clientv3.Op {
		return append(ops, ops[0]) // a key put twice: etcd refuses the transaction
	}
	s := openEtcdHooked(t, opts, func(e *etcdEngine) { e.chainHook = rig.hook })
	defer s.Close()
	require.NoError(t, s.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte("before"), nil) }))
	before := chainVersion(t, cli, opts.Prefix)

	for i, err := range overtake(t, s, rig) {
		require.ErrorIs(t, err, fault.ErrUnavailable, "write %d", i)
	}
	require.False(t, s.Healthy())
	require.Zero(t, count(t, cli, opts.Prefix+"d/chain/"), "nothing of the three writes committed")
	require.Equal(t, before, chainVersion(t, cli, opts.Prefix))
	require.ErrorIs(t, s.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte("after"), nil) }), fault.ErrUnavailable)

	// A store opened afresh continues the chain from etcd.
	s2 := openEtcd(t, opts)
	defer s2.Close()
	_, ok := get(t, s2, "chain/0")
	require.False(t, ok)
	require.NoError(t, s2.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte("after"), nil) }))
	require.Equal(t, before+1, chainVersion(t, cli, opts.Prefix))
}

func chainVersion(t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix+"chain")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	return resp.Kvs[0].Version
}
