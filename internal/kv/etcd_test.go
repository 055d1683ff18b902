package kv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether-run/tether/internal/etcdtest"
	"github.com/tether-run/tether/internal/fault"
)

// openEtcdHooked opens an etcd store, lets prepare change its engine before
// the writer starts, and starts it.
func openEtcdHooked(t *testing.T, opts EtcdOptions, prepare func(*etcdEngine)) *Store {
	t.Helper()
	s, err := OpenEtcd(opts)
	require.NoError(t, err)
	prepare(s.eng.(*etcdEngine))
	s.Start()
	return s
}

// count is how many keys etcd holds under prefix.
func count(t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	return resp.Count
}

// bigWrite sets n keys big/<i> of size bytes each, and deletes del.
func bigWrite(n, size int, del string) func(*Txn) error {
	return func(tx *Txn) error {
		for i := range n {
			if err := tx.Set(fmt.Appendf(nil, "big/%03d", i), make([]byte, size)); err != nil {
				return err
			}
		}
		return tx.Delete([]byte(del))
	}
}

// A write larger than one transaction (MaxTxnOps 8, MaxRequestBytes 16 KiB)
// commits through the log: all of it is read back, after a reopen too, and
// the log is empty afterwards. Many small writes share transactions.
func TestEtcdLargeWritesCommitThroughTheLog(t *testing.T) {
	t.Parallel()
	c := sharedEtcd(t)
	cli := etcdClient(t, c)
	opts := EtcdOptions{Client: cli, Prefix: storePrefix(c, "large"), MaxTxnOps: 8, MaxRequestBytes: 16 << 10}
	s := openEtcd(t, opts)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("gone"), []byte("v")) }))
	require.NoError(t, s.Update(ctx, bigWrite(50, 1000, "gone")))
	require.Zero(t, count(t, cli, opts.Prefix+"log/"), "the log is emptied once applied")
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, s.Update(ctx, func(tx *Txn) error {
				return errors.Join(tx.Set(fmt.Appendf(nil, "small/%02d/a", i), nil), tx.Set(fmt.Appendf(nil, "small/%02d/b", i), nil))
			}))
		}()
	}
	wg.Wait()
	require.NoError(t, s.Close())

	s = openEtcd(t, opts)
	defer s.Close()
	for i := range 50 {
		v, ok := get(t, s, fmt.Sprintf("big/%03d", i))
		require.True(t, ok, i)
		require.Len(t, v, 1000)
	}
	_, ok := get(t, s, "gone")
	require.False(t, ok)
	require.EqualValues(t, 80, count(t, cli, opts.Prefix+"d/small/"))
}

// A crash after the chunks are written and before the marker leaves
// nothing: the writer is told the store is unavailable, and opening the
// store again deletes the chunks.
func TestEtcdCrashBeforeTheMarkerLeavesNothing(t *testing.T) {
	t.Parallel()
	c := sharedEtcd(t)
	cli := etcdClient(t, c)
	opts := EtcdOptions{Client: cli, Prefix: storePrefix(c, "crash-before"), MaxTxnOps: 8, MaxRequestBytes: 16 << 10}
	s := openEtcdHooked(t, opts, func(e *etcdEngine) {
		e.hook = func(step string) error {
			if step == "chunks" {
				return errors.New("crash")
			}
			return nil
		}
	})
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("kept"), []byte("v")) }))
	require.ErrorIs(t, s.Update(ctx, bigWrite(50, 1000, "kept")), fault.ErrUnavailable)
	require.False(t, s.Healthy())
	require.Greater(t, count(t, cli, opts.Prefix+"log/"), int64(1), "the chunks are in etcd")
	require.NoError(t, s.Close())

	s = openEtcd(t, opts)
	defer s.Close()
	require.Zero(t, count(t, cli, opts.Prefix+"log/"))
	require.Zero(t, count(t, cli, opts.Prefix+"d/big/"))
	v, ok := get(t, s, "kept")
	require.True(t, ok)
	require.Equal(t, "v", v)
}

// A crash after the marker, before the writes are applied, is replayed when
// the store is opened again: all of the write is there.
func TestEtcdCrashAfterTheMarkerIsReplayed(t *testing.T) {
	t.Parallel()
	c := sharedEtcd(t)
	cli := etcdClient(t, c)
	opts := EtcdOptions{Client: cli, Prefix: storePrefix(c, "crash-after"), MaxTxnOps: 8, MaxRequestBytes: 16 << 10}
	s := openEtcdHooked(t, opts, func(e *etcdEngine) {
		e.hook = func(step string) error {
			if step == "marked" {
				return errors.New("crash")
			}
			return nil
		}
	})
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("gone"), []byte("v")) }))
	require.ErrorIs(t, s.Update(ctx, bigWrite(50, 1000, "gone")), fault.ErrUnavailable)
	require.Zero(t, count(t, cli, opts.Prefix+"d/big/"), "nothing applied before the crash")
	require.NoError(t, s.Close())

	s = openEtcd(t, opts)
	defer s.Close()
	require.Zero(t, count(t, cli, opts.Prefix+"log/"))
	for i := range 50 {
		_, ok := get(t, s, fmt.Sprintf("big/%03d", i))
		require.True(t, ok, i)
	}
	_, ok := get(t, s, "gone")
	require.False(t, ok)
}

// When the guard fails (another owner), nothing is written, the writer and
// every later one get ErrUnavailable, the store is unhealthy and OnDeposed
// runs once.
func TestEtcdAFailedGuardBreaksTheStore(t *testing.T) {
	t.Parallel()
	c := sharedEtcd(t)
	cli := etcdClient(t, c)
	ctx := context.Background()
	prefix := storePrefix(c, "guard")
	owner := prefix + "owner"
	_, err := cli.Put(ctx, owner, "me")
	require.NoError(t, err)
	var deposed atomic.Int32
	deposedCh := make(chan struct{}, 10)
	s := openEtcd(t, EtcdOptions{
		Client: cli, Prefix: prefix,
		Guard:     []clientv3.Cmp{clientv3.Compare(clientv3.Value(owner), "=", "me")},
		OnDeposed: func() { deposed.Add(1); deposedCh <- struct{}{} },
	})
	defer s.Close()
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("a"), []byte("v")) }))
	_, err = cli.Put(ctx, owner, "other")
	require.NoError(t, err)
	require.ErrorIs(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("b"), []byte("v")) }), fault.ErrUnavailable)
	select {
	case <-deposedCh:
	case <-time.After(5 * time.Second):
		t.Fatal("OnDeposed did not run")
	}
	require.False(t, s.Healthy())
	require.ErrorIs(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("c"), []byte("v")) }), fault.ErrUnavailable)
	require.Zero(t, count(t, cli, prefix+"d/b"))
	require.Zero(t, count(t, cli, prefix+"d/c"))
	require.EqualValues(t, 1, count(t, cli, prefix+"d/a"))
	time.Sleep(50 * time.Millisecond) // a second call would come from the same goroutine's Once
	require.EqualValues(t, 1, deposed.Load())
}

// A TTL key is put with the lease of its expiry bucket, which etcd ends; a
// plain write of the key detaches it.
func TestEtcdTTLKeysHaveLeasesEtcdEnds(t *testing.T) {
	t.Parallel()
	c := sharedEtcd(t)
	cli := etcdClient(t, c)
	ctx := context.Background()
	prefix := storePrefix(c, "ttl")
	s := openEtcdHooked(t, EtcdOptions{Client: cli, Prefix: prefix}, func(e *etcdEngine) { e.bucket = 1 })
	defer s.Close()
	// Expiries are whole seconds: a TTL of 3 s lives at least 2.
	const short = 3 * time.Second
	written := time.Now()
	require.NoError(t, s.Update(ctx, func(tx *Txn) error {
		return errors.Join(tx.SetTTL([]byte("short"), []byte("v"), short), tx.SetTTL([]byte("plain"), []byte("v"), short))
	}))
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("plain"), []byte("v")) }))
	lease := func(k string) (int64, bool) {
		resp, err := cli.Get(ctx, prefix+"d/"+k)
		require.NoError(t, err)
		if len(resp.Kvs) == 0 {
			return 0, false
		}
		return resp.Kvs[0].Lease, true
	}
	id, ok := lease("short")
	if ok {
		require.NotZero(t, id, "a TTL key has a lease")
	} else {
		// Only on a slow machine: etcd may end the lease once the key's
		// least life has passed, never before.
		require.GreaterOrEqual(t, time.Since(written), short-time.Second, "the key went before its TTL")
	}
	id, _ = lease("plain")
	require.Zero(t, id, "a plain write detached the lease")
	require.Eventually(t, func() bool { _, ok := lease("short"); return !ok }, 30*time.Second, 100*time.Millisecond, "etcd ends the lease")
	_, ok = lease("plain")
	require.True(t, ok)
}

// With one member of three killed, writes go on.
func TestEtcdWritesContinueWithAMemberDown(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 3)
	cli := etcdClient(t, c)
	s := openEtcd(t, EtcdOptions{Client: cli, Prefix: c.Prefix(), Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	defer s.Close()
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("before"), []byte("v")) }))
	c.Kill(0)
	for i := range 20 {
		require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set(fmt.Appendf(nil, "after/%d", i), []byte("v")) }))
	}
	require.True(t, s.Healthy())
	_, ok := get(t, s, "before")
	require.True(t, ok)
}

// With the quorum lost, a write fails with ErrUnavailable and the store is
// unhealthy; once the quorum is back, a store opened again has every write
// acknowledged before.
func TestEtcdALostQuorumBreaksTheStore(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 3)
	cli := etcdClient(t, c)
	opts := EtcdOptions{Client: cli, Prefix: c.Prefix(), Timeout: time.Second}
	s := openEtcd(t, opts)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("before"), []byte("v")) }))
	c.Kill(0)
	c.Kill(1)
	require.ErrorIs(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("lost"), []byte("v")) }), fault.ErrUnavailable)
	require.False(t, s.Healthy())
	require.NoError(t, s.Close())

	done := c.RestartAsync(1)
	c.Restart(0)
	require.NoError(t, <-done)
	c.Wait(20 * time.Second)
	s = openEtcd(t, opts)
	defer s.Close()
	v, ok := get(t, s, "before")
	require.True(t, ok)
	require.Equal(t, "v", v)
}

// A value larger than one etcd request is refused as invalid, and the store
// goes on.
func TestEtcdAValueTooLargeIsRefused(t *testing.T) {
	t.Parallel()
	c := sharedEtcd(t)
	s := openEtcd(t, EtcdOptions{Client: etcdClient(t, c), Prefix: storePrefix(c, "too-large"), MaxRequestBytes: 64 << 10})
	defer s.Close()
	ctx := context.Background()
	err := s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("k"), make([]byte, 64<<10)) })
	require.Error(t, err)
	var inv *fault.Invalid
	require.ErrorAs(t, err, &inv)
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("k"), make([]byte, 32<<10)) }))
	require.True(t, s.Healthy())
}
