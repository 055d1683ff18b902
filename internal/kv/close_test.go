package kv

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
)

// An Update that races Close must end, committed or refused with
// ErrUnavailable, never wait forever: a request can reach the writer's lane
// after its last drain.
func TestUpdatesRacingCloseAllEnd(t *testing.T) {
	t.Parallel()
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	for round := range rounds {
		s := open(t, "", Options{InMemory: true})
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					err := s.Update(context.Background(), func(tx *Txn) error {
						return tx.Set([]byte{byte(w), byte(i)}, []byte("v"))
					})
					if err != nil {
						require.ErrorIs(t, err, fault.ErrUnavailable)
						return
					}
				}
			}()
		}
		time.Sleep(time.Millisecond)
		require.NoError(t, s.Close())
		ended := make(chan struct{})
		go func() { wg.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: an Update queued at Close never returned", round)
		}
	}
}

// A panic inside a write transaction rolls it back and is answered as an
// error; the writer goes on serving the next one.
func TestPanicInAWriteIsRolledBackAndTheWriterLives(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), Options{})
	defer s.Close()
	ctx := context.Background()
	err := s.Update(ctx, func(tx *Txn) error {
		if err := tx.Set([]byte("half"), []byte("written")); err != nil {
			return err
		}
		panic("boom")
	})
	require.Error(t, err)
	require.Contains(t, err.Error(), "panic")
	_, found := get(t, s, "half")
	require.False(t, found, "the panicking transaction's write was kept")
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("after"), []byte("ok")) }))
	v, found := get(t, s, "after")
	require.True(t, found)
	require.Equal(t, "ok", v)
}
