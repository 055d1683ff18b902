package kv

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether-run/tether/internal/fault"
)

// Two stores' commits that meet in the batcher go to etcd as one
// transaction, each under its own guard: the store whose guard is false
// fails and breaks, the other commits.
func TestEtcdBatcherKeepsEachStoresGuard(t *testing.T) {
	t.Parallel()
	c := sharedEtcd(t)
	cli := etcdClient(t, c)
	ctx := context.Background()
	b := NewEtcdBatcher(cli, 0, 0, 0)
	defer b.Close()
	release := make(chan struct{})
	queued := make(chan struct{}, 8)
	b.queued = func() { queued <- struct{}{} }
	first := true
	b.beforeSend = func(int) {
		if first {
			first = false
			<-release
		}
	}

	owner := storePrefix(c, "batch-owner")
	_, err := cli.Put(ctx, owner, "someone else")
	require.NoError(t, err)
	deposed := make(chan struct{}, 1)
	open := func(name string, guard []clientv3.Cmp, onDeposed func()) (*Store, string) {
		prefix := storePrefix(c, name)
		s := openEtcd(t, EtcdOptions{Client: cli, Prefix: prefix, Guard: guard, OnDeposed: onDeposed, Batcher: b})
		t.Cleanup(func() { s.Close() })
		return s, prefix
	}
	held, _ := open("batch-held", nil, nil)
	gone, gonePrefix := open("batch-deposed", []clientv3.Cmp{clientv3.Compare(clientv3.Value(owner), "=", "me")}, func() { deposed <- struct{}{} })
	kept, keptPrefix := open("batch-kept", []clientv3.Cmp{clientv3.Compare(clientv3.Value(owner), "=", "someone else")}, nil)

	set := func(s *Store) chan error {
		ch := make(chan error, 1)
		go func() { ch <- s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("k"), []byte("v")) }) }()
		return ch
	}
	// The first transaction is held in the batcher while the other two
	// stores' commits queue behind it; they then go as one.
	heldErr := set(held)
	<-queued
	goneErr, keptErr := set(gone), set(kept)
	<-queued
	<-queued
	close(release)

	require.NoError(t, <-heldErr)
	require.ErrorIs(t, <-goneErr, fault.ErrUnavailable)
	require.NoError(t, <-keptErr)
	<-deposed
	require.False(t, gone.Healthy())
	require.True(t, kept.Healthy())
	require.Zero(t, count(t, cli, gonePrefix+"d/k"))
	require.EqualValues(t, 1, count(t, cli, keptPrefix+"d/k"))
	b.mu.Lock()
	defer b.mu.Unlock()
	require.EqualValues(t, 2, b.Sent, "the two queued commits shared one transaction")
	require.EqualValues(t, 3, b.Parts)
}
