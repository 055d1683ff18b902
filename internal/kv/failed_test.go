package kv

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAFailedWriteAnswersOnceWhatItReadIsDurable: a write that fails after
// reading another's write still in flight (a claim refused because of a
// claim not yet logged) is answered only once that write is durable, so its
// refusal is never contradicted by a read made after it, nor by a crash.
// The lease linearizability check found this: a 409 named a holder whose
// claim a GET made after the 409 did not show yet.
func TestAFailedWriteAnswersOnceWhatItReadIsDurable(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), Options{})
	defer s.Close()
	checkFailedWaitsForWhatItRead(t, s, 50)
}

// checkFailedWaitsForWhatItRead runs rounds of a write and a second one
// refused because it read the first while in flight, and checks that the
// refusal comes only once a reader sees the first.
func checkFailedWaitsForWhatItRead(t *testing.T, s *Store, rounds int) {
	ctx := context.Background()
	errTaken := errors.New("taken")
	for i := range rounds {
		key := fmt.Appendf(nil, "lease/%02d", i)
		applied := make(chan struct{})
		first := make(chan error, 1)
		go func() {
			first <- s.Update(ctx, func(tx *Txn) error {
				defer close(applied)
				return tx.Set(key, []byte("first"))
			})
		}()
		<-applied // applied, and most likely still being logged
		err := s.Update(ctx, func(tx *Txn) error {
			if _, ok, err := tx.Get(key); err != nil || ok {
				return errors.Join(err, errTaken)
			}
			return tx.Set(key, []byte("second"))
		})
		require.ErrorIs(t, err, errTaken, "the second write runs after the first")
		v, ok := get(t, s, string(key))
		require.True(t, ok, "round %d: a write was refused because of one that readers do not see yet", i)
		require.Equal(t, "first", v)
		require.NoError(t, <-first)
	}
}

// TestAFailedWriteUnderABarrierIsCoveredByItsWait: under a barrier a failed
// write is answered at once, and the barrier's Wait covers what it read.
func TestAFailedWriteUnderABarrierIsCoveredByItsWait(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), Options{})
	defer s.Close()
	errTaken := errors.New("taken")
	for i := range 50 {
		key := fmt.Appendf(nil, "lease/%02d", i)
		applied := make(chan struct{})
		go func() {
			_ = s.Update(context.Background(), func(tx *Txn) error {
				defer close(applied)
				return tx.Set(key, []byte("first"))
			})
		}()
		<-applied
		ctx, b := WithBarrier(context.Background())
		err := s.Update(ctx, func(tx *Txn) error {
			if _, ok, err := tx.Get(key); err != nil || ok {
				return errors.Join(err, errTaken)
			}
			return nil
		})
		require.ErrorIs(t, err, errTaken)
		require.NoError(t, b.Wait())
		_, ok := get(t, s, string(key))
		require.True(t, ok, "round %d: the barrier's wait did not cover what a failed write read", i)
	}
}
