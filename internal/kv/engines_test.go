package kv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether-run/tether/internal/etcdtest"
	"github.com/tether-run/tether/internal/pgtest"
)

// An engineCase opens a store of one engine; each call of reopen opens the
// same store again (after the last one was closed).
type engineCase struct {
	name   string
	reopen func(t *testing.T) *Store
}

// etcdCluster is one real cluster the engine table shares; every store gets
// a prefix of its own in it.
var (
	etcdOnce    sync.Once
	etcdPrefix  atomic.Int64
	etcdShared  *etcdtest.Cluster
	etcdStop    = func() {}
	etcdStores  int
	etcdStoreMu sync.Mutex
)

// engines are the cases the behaviour tests run on: Badger in a temporary
// directory, etcd (a real three-member cluster), PostgreSQL (a database of
// the test's own on pgtest's server), and the simulation's in-memory engine
// on a MemDisk.
func engines(t *testing.T) []engineCase {
	dir := t.TempDir()
	etcdStoreMu.Lock()
	etcdStores++
	n := etcdStores
	etcdStoreMu.Unlock()
	disk := NewMemDisk()
	return []engineCase{
		{"badger", func(t *testing.T) *Store { return open(t, dir, Options{}) }},
		{"etcd", func(t *testing.T) *Store {
			c := sharedEtcd(t)
			return openEtcd(t, EtcdOptions{Client: etcdClient(t, c), Prefix: fmt.Sprintf("%sengines-%d/", c.Prefix(), n)})
		}},
		{"postgres", pgReopener()},
		{"mem", func(t *testing.T) *Store {
			s := OpenMem(disk, MemOptions{})
			s.Start()
			return s
		}},
	}
}

// sharedEtcd starts the cluster the engine table shares, once for the
// package's tests; TestMain stops it before removing its directories (a
// member still running then dies on its next purge of a removed WAL
// directory, and takes the test binary with it).
func sharedEtcd(t *testing.T) *etcdtest.Cluster {
	etcdOnce.Do(func() {
		dir, err := osMkdirTemp()
		if err != nil {
			t.Fatal(err)
		}
		if etcdShared, etcdStop, err = etcdtest.StartShared(dir, 3); err != nil {
			t.Fatalf("starting the shared etcd cluster: %v", err)
		}
	})
	if etcdShared == nil {
		t.Fatal("the shared etcd cluster did not start")
	}
	return etcdShared
}

// storePrefix is a prefix in c no other store has (tests may run again in
// the same process, against the same shared cluster).
func storePrefix(c *etcdtest.Cluster, name string) string {
	return fmt.Sprintf("%s%s-%d/", c.Prefix(), name, etcdPrefix.Add(1))
}

func openEtcd(t *testing.T, opts EtcdOptions) *Store {
	t.Helper()
	s, err := OpenEtcd(opts)
	require.NoError(t, err)
	s.Start()
	return s
}

func TestEnginesKeepDurableWritesAndNothingOfFailedOnes(t *testing.T) {
	t.Parallel()
	for _, ec := range engines(t) {
		t.Run(ec.name, func(t *testing.T) {
			t.Parallel()
			checkDurableAndFailed(t, ec.reopen, 100)
		})
	}
}

func TestEnginesLaterWritesReadEarlierOnes(t *testing.T) {
	t.Parallel()
	for _, ec := range engines(t) {
		t.Run(ec.name, func(t *testing.T) {
			t.Parallel()
			s := ec.reopen(t)
			defer s.Close()
			ctx := context.Background()
			const n = 100
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					require.NoError(t, s.Update(ctx, func(tx *Txn) error {
						v, _, err := tx.Get([]byte("counter"))
						if err != nil {
							return err
						}
						return tx.Set([]byte("counter"), append(slices.Clone(v), 'x'))
					}))
				}()
			}
			wg.Wait()
			v, ok := get(t, s, "counter")
			require.True(t, ok)
			require.Len(t, v, n, "every write saw the one before it")
		})
	}
}

// Scans over committed state (more than one page of etcd's), forward and
// reverse, from a key, with and without values, merged with a write's own.
func TestEnginesScan(t *testing.T) {
	t.Parallel()
	for _, ec := range engines(t) {
		t.Run(ec.name, func(t *testing.T) {
			t.Parallel()
			s := ec.reopen(t)
			defer s.Close()
			ctx := context.Background()
			const n = 600
			var want []string
			for lo := 0; lo < n; lo += 100 {
				require.NoError(t, s.Update(ctx, func(tx *Txn) error {
					for i := lo; i < lo+100; i++ {
						if err := tx.Set(fmt.Appendf(nil, "p/%04d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
							return err
						}
					}
					return nil
				}))
			}
			for i := range n {
				want = append(want, fmt.Sprintf("p/%04d", i))
			}
			require.NoError(t, s.Update(ctx, func(tx *Txn) error {
				return errors.Join(tx.Set([]byte("o/x"), nil), tx.Set([]byte("q/x"), nil))
			}))
			scan := func(tx *Txn, after []byte, reverse, withValues bool) []string {
				var got []string
				require.NoError(t, tx.Scan([]byte("p/"), after, reverse, withValues, func(k, v []byte) (bool, error) {
					if withValues {
						require.Equal(t, "v"+fmt.Sprint(mustAtoi(t, string(k[2:]))), string(v))
					}
					got = append(got, string(k))
					return true, nil
				}))
				return got
			}
			rev := slices.Clone(want)
			slices.Reverse(rev)
			require.NoError(t, s.View(func(tx *Txn) error {
				require.Equal(t, want, scan(tx, nil, false, true))
				require.Equal(t, want, scan(tx, nil, false, false))
				require.Equal(t, rev, scan(tx, nil, true, true))
				require.Equal(t, want[301:], scan(tx, []byte("p/0300"), false, false))
				require.Equal(t, rev[n-300:], scan(tx, []byte("p/0300"), true, true))
				var first []string
				require.NoError(t, tx.Scan([]byte("p/"), nil, false, false, func(k, _ []byte) (bool, error) {
					first = append(first, string(k))
					return len(first) < 3, nil
				}))
				require.Equal(t, want[:3], first)
				return nil
			}))
			require.NoError(t, s.Update(ctx, func(tx *Txn) error {
				require.NoError(t, tx.Set([]byte("p/0000a"), []byte("new")))
				require.NoError(t, tx.Delete([]byte("p/0001")))
				var got []string
				require.NoError(t, tx.Scan([]byte("p/"), nil, false, true, func(k, v []byte) (bool, error) {
					got = append(got, string(k)+"="+string(v))
					return len(got) < 3, nil
				}))
				require.Equal(t, []string{"p/0000=v0", "p/0000a=new", "p/0002=v2"}, got)
				return nil
			}))
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// A key written with a TTL is gone once it has passed, for readers and for
// the snapshot; a later plain write keeps it.
func TestEnginesTTLKeysExpire(t *testing.T) {
	t.Parallel()
	for _, ec := range engines(t) {
		t.Run(ec.name, func(t *testing.T) {
			t.Parallel()
			s := ec.reopen(t)
			defer s.Close()
			ctx := context.Background()
			// Expiries are kept in whole seconds, so a key written with a TTL
			// of d lives at least d less a second.
			const short = 3 * time.Second
			written := time.Now()
			require.NoError(t, s.Update(ctx, func(tx *Txn) error {
				return errors.Join(
					tx.SetTTL([]byte("t/short"), []byte("v"), short),
					tx.SetTTL([]byte("t/kept"), []byte("v"), short),
					tx.SetTTL([]byte("t/long"), []byte("v"), time.Hour))
			}))
			require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("t/kept"), []byte("plain")) }))
			_, ok := get(t, s, "t/short")
			if elapsed := time.Since(written); !ok {
				// Gone already: only a slow machine may see that, once the
				// key's least life has passed.
				require.GreaterOrEqual(t, elapsed, short-time.Second, "t/short expired before its TTL")
			}
			require.Eventually(t, func() bool { _, ok := get(t, s, "t/short"); return !ok }, 10*time.Second, 50*time.Millisecond)
			var keys []string
			require.NoError(t, s.Snapshot(func(k, _ []byte, _ uint64) error { keys = append(keys, string(k)); return nil }))
			require.Equal(t, []string{"t/kept", "t/long"}, keys)
			require.NoError(t, s.View(func(tx *Txn) error {
				keys = nil
				return tx.Scan([]byte("t/"), nil, false, false, func(k, _ []byte) (bool, error) {
					keys = append(keys, string(k))
					return true, nil
				})
			}))
			require.Equal(t, []string{"t/kept", "t/long"}, keys)
		})
	}
}

// Snapshot holds every key with its value and expiry, in order.
func TestEnginesSnapshot(t *testing.T) {
	t.Parallel()
	for _, ec := range engines(t) {
		t.Run(ec.name, func(t *testing.T) {
			t.Parallel()
			s := ec.reopen(t)
			defer s.Close()
			ctx := context.Background()
			for i := range 300 {
				require.NoError(t, s.Update(ctx, func(tx *Txn) error {
					if i%100 == 0 {
						return tx.SetTTL(fmt.Appendf(nil, "s/%03d", i), []byte("ttl"), time.Hour)
					}
					return tx.Set(fmt.Appendf(nil, "s/%03d", i), fmt.Appendf(nil, "%d", i))
				}))
			}
			i := 0
			require.NoError(t, s.Snapshot(func(k, v []byte, exp uint64) error {
				require.Equal(t, fmt.Sprintf("s/%03d", i), string(k))
				if i%100 == 0 {
					require.Equal(t, "ttl", string(v))
					require.Greater(t, exp, uint64(time.Now().Unix()))
				} else {
					require.Equal(t, fmt.Sprint(i), string(v))
					require.Zero(t, exp)
				}
				i++
				return nil
			}))
			require.Equal(t, 300, i)
		})
	}
}

// A write that fails after reading one in flight is answered only once that
// one is durable (see TestAFailedWriteAnswersOnceWhatItReadIsDurable).
func TestEnginesFailedWriteAnswersOnceWhatItReadIsDurable(t *testing.T) {
	t.Parallel()
	for _, ec := range engines(t) {
		t.Run(ec.name, func(t *testing.T) {
			t.Parallel()
			s := ec.reopen(t)
			defer s.Close()
			checkFailedWaitsForWhatItRead(t, s, 20)
		})
	}
}

func osMkdirTemp() (string, error) { return os.MkdirTemp(etcdTmp, "") }

// etcdTmp holds the shared cluster's directories, removed after the tests.
var etcdTmp string

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(runHelper(h))
	}
	var err error
	if etcdTmp, err = os.MkdirTemp("", "kv-etcd-"); err != nil {
		panic(err)
	}
	code := pgtest.Run(m)
	etcdStop()
	_ = os.RemoveAll(etcdTmp)
	os.Exit(code)
}

// etcdClient is a client of c, closed when the test ends.
func etcdClient(t *testing.T, c *etcdtest.Cluster) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Writes under a barrier return once applied; Wait returns once every one
// is durable and visible.
func TestEnginesBarrier(t *testing.T) {
	t.Parallel()
	for _, ec := range engines(t) {
		t.Run(ec.name, func(t *testing.T) {
			t.Parallel()
			s := ec.reopen(t)
			defer s.Close()
			ctx, b := WithBarrier(context.Background())
			for i := range 30 {
				require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set(fmt.Appendf(nil, "b/%02d", i), []byte("v")) }))
			}
			require.NoError(t, b.Wait())
			for i := range 30 {
				_, ok := get(t, s, fmt.Sprintf("b/%02d", i))
				require.True(t, ok, i)
			}
			st := s.Stats()
			require.Positive(t, st.Syncs.Load())
			require.EqualValues(t, 30, st.Keys.Load())
			require.EqualValues(t, 30, st.Closures.Load())
		})
	}
}
