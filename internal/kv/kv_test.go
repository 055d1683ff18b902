package kv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func open(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	opts.Dir = dir
	s, err := Open(opts)
	require.NoError(t, err)
	s.Start()
	return s
}

func get(t *testing.T, s *Store, key string) (string, bool) {
	t.Helper()
	var out string
	var found bool
	require.NoError(t, s.View(func(tx *Txn) error {
		v, ok, err := tx.Get([]byte(key))
		out, found = string(v), ok
		return err
	}))
	return out, found
}

func TestDurableWritesSurviveReopenAndFailedOnesLeaveNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	checkDurableAndFailed(t, func(t *testing.T) *Store { return open(t, dir, Options{}) }, 200)
}

// checkDurableAndFailed runs n concurrent writes, every third failing, on
// the store reopen opens, and checks after reopening it that exactly the
// others are there.
func checkDurableAndFailed(t *testing.T, reopen func(t *testing.T) *Store, n int) {
	s := reopen(t)
	ctx := context.Background()
	errBoom := errors.New("boom")
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(ctx, func(tx *Txn) error {
				if err := tx.Set(fmt.Appendf(nil, "k%03d", i), []byte("v")); err != nil {
					return err
				}
				if i%3 == 0 {
					return errBoom
				}
				return nil
			})
			if i%3 == 0 {
				require.ErrorIs(t, err, errBoom)
			} else {
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	require.NoError(t, s.Close())

	s = reopen(t)
	defer s.Close()
	for i := range n {
		_, ok := get(t, s, fmt.Sprintf("k%03d", i))
		require.Equal(t, i%3 != 0, ok, "key %d", i)
	}
	require.Positive(t, s.Stats().Syncs.Load()+1)
}

// TestLaterWritesReadEarlierOnesInFlight: a write reads what the writes
// before it left, whether they are in its own segment, in a commit still in
// flight, or in Badger.
func TestLaterWritesReadEarlierOnesInFlight(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), Options{})
	defer s.Close()
	ctx := context.Background()
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	// Each write appends to a counter key that the previous one wrote.
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Update(ctx, func(tx *Txn) error {
				v, _, err := tx.Get([]byte("counter"))
				if err != nil {
					return err
				}
				return tx.Set([]byte("counter"), append(slices.Clone(v), 'x'))
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// A durable write after them all: once it returns, every earlier one is
	// durable and visible to readers.
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("fence"), nil) }))
	v, ok := get(t, s, "counter")
	require.True(t, ok)
	require.Len(t, v, n, "every write saw the one before it")
}

// TestScanMergesSnapshotAndPendingWrites: a scan inside a write sees the
// stored keys and the transaction's own writes, the newest winning.
func TestScanMergesSnapshotAndPendingWrites(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), Options{})
	defer s.Close()
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx *Txn) error {
		for _, k := range []string{"p/a", "p/c", "p/e", "q/x"} {
			if err := tx.Set([]byte(k), []byte("old")); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, s.Update(ctx, func(tx *Txn) error {
		require.NoError(t, tx.Set([]byte("p/b"), []byte("new")))
		require.NoError(t, tx.Set([]byte("p/c"), []byte("new")))
		require.NoError(t, tx.Delete([]byte("p/e")))
		var got []string
		err := tx.Scan([]byte("p/"), nil, false, true, func(k, v []byte) (bool, error) {
			got = append(got, string(k)+"="+string(v))
			return true, nil
		})
		require.Equal(t, []string{"p/a=old", "p/b=new", "p/c=new"}, got)
		got = nil
		require.NoError(t, tx.Scan([]byte("p/"), []byte("p/c"), true, false, func(k, _ []byte) (bool, error) {
			got = append(got, string(k))
			return true, nil
		}))
		require.Equal(t, []string{"p/b", "p/a"}, got)
		return err
	}))
}

func TestAnEmptyMemtableFileDoesNotBlockOpening(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, Options{})
	require.NoError(t, s.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte("k"), []byte("v")) }))
	require.NoError(t, s.Close())
	// What a power failure right after a memtable rotation leaves behind.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "00099.mem"), nil, 0o644))
	s = open(t, dir, Options{})
	defer s.Close()
	v, ok := get(t, s, "k")
	require.True(t, ok)
	require.Equal(t, "v", v)
	_, err := os.Stat(filepath.Join(dir, "00099.mem"))
	require.True(t, os.IsNotExist(err), "the empty file is gone")
}

// What a kill -9 inside Badger's open leaves behind: the next value-log file
// created but not yet sized. The next open removes it and finds every record.
func TestAnEmptyNewestValueLogDoesNotBlockOpening(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, Options{})
	require.NoError(t, s.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte("k"), []byte("v")) }))
	require.NoError(t, s.Close())
	vlogs, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	require.NoError(t, err)
	require.NotEmpty(t, vlogs)
	planted := filepath.Join(dir, "000099.vlog")
	require.NoError(t, os.WriteFile(planted, nil, 0o644))

	s = open(t, dir, Options{})
	v, ok := get(t, s, "k")
	require.True(t, ok)
	require.Equal(t, "v", v)
	_, err = os.Stat(planted)
	require.True(t, os.IsNotExist(err), "the empty file is gone")
	require.NoError(t, s.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte("k2"), []byte("v2")) }))
	require.NoError(t, s.Close())

	s = open(t, dir, Options{})
	defer s.Close()
	v, ok = get(t, s, "k2")
	require.True(t, ok)
	require.Equal(t, "v2", v)
}

// What a kill -9 inside Badger's deletion of a value log leaves behind
// (it truncates the file, then removes it): an empty value log older than
// the newest. The next open removes it too.
func TestAnEmptyOlderValueLogDoesNotBlockOpening(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, Options{})
	require.NoError(t, s.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte("k"), []byte("v")) }))
	require.NoError(t, s.Close())
	planted := filepath.Join(dir, "000000.vlog")
	require.NoError(t, os.WriteFile(planted, nil, 0o644))

	s = open(t, dir, Options{})
	defer s.Close()
	v, ok := get(t, s, "k")
	require.True(t, ok)
	require.Equal(t, "v", v)
	_, err := os.Stat(planted)
	require.True(t, os.IsNotExist(err), "the empty file is gone")
}

// TestKeysAreServedFairly: while one tenant floods the writer, another
// tenant's write waits behind at most KeyInflight of the flood.
func TestKeysAreServedFairly(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), Options{KeyInflight: 8})
	defer s.Close()

	// Hold the writer so that everything below queues up behind it.
	hold, holding := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.Update(context.Background(), func(*Txn) error { close(holding); <-hold; return nil })
	}()
	<-holding

	var mu sync.Mutex
	var order []string
	write := func(tenant string, i int) error {
		ctx := WithFairnessKey(context.Background(), tenant)
		return s.Update(ctx, func(tx *Txn) error {
			mu.Lock()
			order = append(order, tenant)
			mu.Unlock()
			return tx.Set(fmt.Appendf(nil, "%s/%03d", tenant, i), nil)
		})
	}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() { defer wg.Done(); require.NoError(t, write("flood", i)) }()
	}
	// Let the flood reach the writer's queue (8 of it) and its gate (the rest).
	require.Eventually(t, func() bool { return len(s.reqs) == 8 }, 2*time.Second, time.Millisecond)
	wg.Add(1)
	go func() { defer wg.Done(); require.NoError(t, write("quiet", 0)) }()
	require.Eventually(t, func() bool { return len(s.reqs) == 9 }, 2*time.Second, time.Millisecond)
	close(hold)
	wg.Wait()

	require.Len(t, order, 101)
	pos := slices.Index(order, "quiet")
	require.LessOrEqual(t, pos, 8, "the quiet tenant waited behind %d writes of the flood", pos)
}

// TestBarrierWaitsOnceForManyWrites: writes made under a barrier return
// once applied (a failed one too), and Wait returns once every applied one
// is durable and visible.
func TestBarrierWaitsOnceForManyWrites(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), Options{})
	defer s.Close()
	ctx, b := WithBarrier(context.Background())
	errBoom := errors.New("boom")
	for i := range 50 {
		err := s.Update(ctx, func(tx *Txn) error {
			if err := tx.Set(fmt.Appendf(nil, "b/%02d", i), []byte("v")); err != nil {
				return err
			}
			if i == 7 {
				return errBoom
			}
			return nil
		})
		if i == 7 {
			require.ErrorIs(t, err, errBoom)
		} else {
			require.NoError(t, err)
		}
	}
	require.NoError(t, b.Wait())
	for i := range 50 {
		_, ok := get(t, s, fmt.Sprintf("b/%02d", i))
		require.Equal(t, i != 7, ok, "key %d", i)
	}
	require.NoError(t, b.Wait(), "a second wait has nothing left to wait for")
}

// TestASegmentLargerThanOneBadgerTransaction: two writes, each within
// Badger's limit, that share a segment larger than one Badger transaction
// takes are both kept (the applier commits the segment in parts).
func TestASegmentLargerThanOneBadgerTransaction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, Options{})
	const valueSize = 64 << 10
	perTxn := int(s.maxBytes) / valueSize // values that fill one write's limit
	hold, holding := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.Update(context.Background(), func(*Txn) error { close(holding); <-hold; return nil })
	}()
	<-holding
	value := make([]byte, valueSize)
	write := func(prefix string, n int) chan error {
		done := make(chan error, 1)
		go func() {
			done <- s.Update(context.Background(), func(tx *Txn) error {
				for i := range n {
					if err := tx.Set(fmt.Appendf(nil, "%s/%04d", prefix, i), value); err != nil {
						return err
					}
				}
				return nil
			})
		}()
		return done
	}
	a := write("a", perTxn*45/100)
	require.Eventually(t, func() bool { return len(s.reqs) == 1 }, 2*time.Second, time.Millisecond)
	b := write("b", perTxn*90/100)
	require.Eventually(t, func() bool { return len(s.reqs) == 2 }, 2*time.Second, time.Millisecond)
	close(hold)
	require.NoError(t, <-a)
	require.NoError(t, <-b)
	// Wait for the applier to have written both into Badger (or failed).
	require.Eventually(t, func() bool {
		s.visMu.Lock()
		defer s.visMu.Unlock()
		return len(s.visible) == 0 || !s.Healthy()
	}, 10*time.Second, time.Millisecond)
	require.True(t, s.Healthy(), "the applier could not write the segment into Badger")
	require.NoError(t, s.Close())
	s = open(t, dir, Options{})
	defer s.Close()
	for _, k := range []string{"a/0000", fmt.Sprintf("b/%04d", perTxn*90/100-1)} {
		v, ok := get(t, s, k)
		require.True(t, ok, k)
		require.Len(t, v, valueSize)
	}
}
