package kv

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether-run/tether/internal/fault"
)

// pipelineRig holds the first pipelined transaction after it is armed just
// before it is sent, until two later ones have been answered by etcd; then
// lets it go. change, when set, rewrites every transaction's operations as
// it is sent.
type pipelineRig struct {
	armed    chan struct{} // closed to arm
	held     chan struct{} // closed once the first is held
	answered chan error    // each later one's answer from etcd
	resume   chan struct{} // lets the held one go
	first    *chainedTxn
	change   func([]clientv3.Op) []clientv3.Op
}

func newPipelineRig() *pipelineRig {
	return &pipelineRig{armed: make(chan struct{}), held: make(chan struct{}), answered: make(chan error, 16), resume: make(chan struct{})}
}

// hook is the engine's chainHook. It runs on each transaction's own
// goroutine; the first one after arming is held before it is sent.
func (r *pipelineRig) hook(step string, t *chainedTxn) {
	select {
	case <-r.armed:
	default:
		return
	}
	switch step {
	case "send":
		if r.change != nil {
			t.ops = r.change(t.ops)
		}
		select {
		case <-r.held:
			return
		default:
		}
		r.first = t
		close(r.held)
		<-r.resume
	case "answered":
		if t != r.first {
			r.answered <- nil
		}
	}
}

// overtake appends "0", "1" and "2" to key x, each in a group of its own:
// the first is held before it is sent while the other two, which carry its
// write, reach etcd and are answered ahead of it. It returns the three
// Updates' errors.
func overtake(t *testing.T, s *Store, rig *pipelineRig) []error {
	t.Helper()
	ctx := context.Background()
	close(rig.armed)
	errs := make([]chan error, 3)
	for i := range errs {
		errs[i] = make(chan error, 1)
		go func() {
			errs[i] <- s.Update(ctx, func(tx *Txn) error {
				v, _, err := tx.Get([]byte("x"))
				if err != nil {
					return err
				}
				return tx.Set([]byte("x"), append(bytes.Clone(v), byte('0'+i)))
			})
		}()
		if i == 0 {
			<-rig.held
		} else {
			<-rig.answered
		}
	}
	close(rig.resume)
	out := make([]error, 3)
	for i, ch := range errs {
		out[i] = <-ch
	}
	return out
}

// A transaction that a later one overtakes in etcd is durable with it (the
// later one carried its writes) and, arriving last, writes nothing over
// what came after it: etcd ends with the writer's order.
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
	require.EqualValues(t, 1, s.Stats().Overtaken.Load())
	resp, err := cli.Get(context.Background(), opts.Prefix+"d/x")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	v, _, err := unwrap(resp.Kvs[0].Value)
	require.NoError(t, err)
	require.Equal(t, "012", string(v))
	got, ok := get(t, s, "x")
	require.True(t, ok)
	require.Equal(t, "012", string(got))
}

// A transaction that fails takes the later ones down with it: they carry
// its writes, so etcd refuses them too (here each puts a key twice), none
// is acknowledged, the store breaks and etcd holds none of the writes. A
// store opened afresh continues the chain.
func TestEtcdPipelineFailureTakesTheLaterTransactionsDown(t *testing.T) {
	t.Parallel()
	c := sharedEtcd(t)
	cli := etcdClient(t, c)
	opts := EtcdOptions{Client: cli, Prefix: storePrefix(c, "pipe-fail"), Pipeline: 4}
	rig := newPipelineRig()
	rig.change = func(ops []clientv3.Op) []clientv3.Op {
		for _, op := range ops {
			if string(op.KeyBytes()) == opts.Prefix+"d/x" {
				return append(ops, op) // a key put twice: etcd refuses the transaction
			}
		}
		return ops
	}
	s := openEtcdHooked(t, opts, func(e *etcdEngine) { e.chainHook = rig.hook })
	defer s.Close()
	require.NoError(t, s.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte("before"), nil) }))
	before := chainOf(t, cli, opts.Prefix)

	for i, err := range overtake(t, s, rig) {
		require.ErrorIs(t, err, fault.ErrUnavailable, "write %d", i)
	}
	require.False(t, s.Healthy())
	require.Zero(t, count(t, cli, opts.Prefix+"d/x"), "none of the three writes committed")
	require.Equal(t, before, chainOf(t, cli, opts.Prefix))
	require.ErrorIs(t, s.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte("after"), nil) }), fault.ErrUnavailable)

	s2 := openEtcd(t, opts)
	defer s2.Close()
	_, ok := get(t, s2, "x")
	require.False(t, ok)
	_, ok = get(t, s2, "before")
	require.True(t, ok)
	require.NoError(t, s2.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte("after"), nil) }))
	require.Equal(t, chainValue(s2.eng.(*etcdEngine).pipe.seq), chainOf(t, cli, opts.Prefix))
	require.Greater(t, chainOf(t, cli, opts.Prefix), before)
}

func chainOf(t *testing.T, cli *clientv3.Client, prefix string) string {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix+"chain")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	return string(resp.Kvs[0].Value)
}
