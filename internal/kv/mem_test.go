package kv

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
)

func openMem(t *testing.T, disk *MemDisk) *Store {
	t.Helper()
	s := OpenMem(disk, MemOptions{})
	s.Start()
	return s
}

func set(s *Store, key string) error {
	return s.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte(key), []byte("v")) })
}

// A failed write is answered an error, breaks the store and leaves nothing.
func TestMemFailedWriteLeavesNothing(t *testing.T) {
	t.Parallel()
	disk := NewMemDisk()
	s := openMem(t, disk)
	require.NoError(t, set(s, "a"))
	disk.FailNext(errors.New("disk full"))
	require.ErrorIs(t, set(s, "b"), fault.ErrUnavailable)
	require.False(t, s.Healthy())
	require.ErrorIs(t, set(s, "c"), fault.ErrUnavailable)
	require.NoError(t, s.Close())

	s = openMem(t, disk)
	defer s.Close()
	_, ok := get(t, s, "a")
	require.True(t, ok, "an acknowledged write survives")
	_, ok = get(t, s, "b")
	require.False(t, ok, "a failed write leaves nothing")
	require.NoError(t, set(s, "d"))
}

// A crash while a group syncs keeps what keep says of it, and answers
// none of it; acknowledged writes all survive.
func TestMemCrashKeepsWhatItSaysOfTheGroupInFlight(t *testing.T) {
	t.Parallel()
	for _, kept := range []int{0, 1, 2} {
		t.Run(fmt.Sprint(kept), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				disk := NewMemDisk()
				s := openMem(t, disk)
				require.NoError(t, set(s, "acked"))
				disk.SetSyncDelay(time.Second)
				// Under a barrier each write is answered once applied: x1's
				// group syncs and is acknowledged, x2's is in flight when
				// the power is cut.
				ctx, b := WithBarrier(context.Background())
				require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("x1"), []byte("v")) }))
				synctest.Wait() // x1's group is syncing
				require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("x2"), []byte("v")) }))
				waited := make(chan error, 1)
				go func() { waited <- b.Wait() }()
				time.Sleep(time.Second) // x1's sync ends; x2's group starts syncing
				synctest.Wait()
				inflight, got := disk.Crash(func(n int) int { return min(kept, n) })
				require.Equal(t, 1, inflight, "x2's group was in flight")
				require.NoError(t, s.Close())
				require.Error(t, <-waited, "a group a crash cut is not acknowledged")
				require.Equal(t, min(kept, 1), got)

				s = openMem(t, disk)
				defer s.Close()
				for key, want := range map[string]bool{"acked": true, "x1": true, "x2": kept > 0} {
					_, ok := get(t, s, key)
					require.Equal(t, want, ok, key)
				}
			})
		})
	}
}

// Nothing is visible to readers before its sync ends.
func TestMemNothingVisibleBeforeItsSync(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		disk := NewMemDisk()
		s := openMem(t, disk)
		defer s.Close()
		disk.SetSyncDelay(time.Minute)
		done := make(chan error, 1)
		go func() { done <- set(s, "k") }()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		_, ok := get(t, s, "k")
		require.False(t, ok)
		require.Empty(t, done)
		require.NoError(t, <-done)
		_, ok = get(t, s, "k")
		require.True(t, ok)
	})
}
