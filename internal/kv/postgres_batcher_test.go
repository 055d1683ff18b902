package kv

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/pgtest"
)

// Three stores' commits that meet in the batcher go to PostgreSQL as one
// transaction in one round trip, each under its own guard: the store whose
// guard is false fails alone (its OnDeposed runs, nothing of it is
// written), the others' writes are committed.
func TestPostgresBatcherKeepsEachStoresGuard(t *testing.T) {
	t.Parallel()
	p := pgPool(t, pgtest.URL(t))
	ctx := context.Background()
	b := NewPostgresBatcher(p, PostgresBatcherOptions{InFlight: 1})
	defer b.Close()
	release := make(chan struct{})
	queued := make(chan struct{}, 8)
	b.queued = func() { queued <- struct{}{} }
	sizes := make(chan int, 8)
	first := false
	b.beforeSend = func(parts int) {
		sizes <- parts
		if first {
			first = false
			<-release
		}
	}
	deposed := make(chan struct{}, 2)
	open := func(shard int, owner string, onDeposed func()) *Store {
		setOwner(t, p, shard, owner, 1)
		s := openPostgres(t, PostgresOptions{Pool: p, Shard: shard, Guard: &PostgresGuard{Owner: owner, Epoch: 1}, OnDeposed: onDeposed, Batcher: b})
		t.Cleanup(func() { s.Close() })
		return s
	}
	held := open(20, "me", nil)
	gone := open(21, "me", func() { deposed <- struct{}{} })
	kept := open(22, "me", nil)
	// Warm the statement cache outside the counted transactions.
	require.NoError(t, held.Update(ctx, pgSet("warm", "v")))
	<-queued
	<-sizes
	sent0, parts0 := b.Stats()
	first = true // the next transaction waits for release

	setOwner(t, p, 21, "someone else", 2)
	set := func(s *Store, key string) chan error {
		ch := make(chan error, 1)
		go func() { ch <- s.Update(ctx, pgSet(key, "v")) }()
		return ch
	}
	// The first transaction is held in the batcher while the other two
	// stores' commits queue behind it; they then go as one.
	heldErr := set(held, "k")
	<-queued
	require.Equal(t, 1, <-sizes) // sent alone, and waiting for release
	goneErr, keptErr := set(gone, "k"), set(kept, "k")
	<-queued
	<-queued
	close(release)

	require.NoError(t, <-heldErr)
	require.ErrorIs(t, <-goneErr, fault.ErrUnavailable)
	require.NoError(t, <-keptErr)
	<-deposed
	require.False(t, gone.Healthy())
	require.True(t, kept.Healthy())
	require.True(t, held.Healthy())
	require.Equal(t, []string{"k", "warm"}, rowKeys(t, p, 20))
	require.Empty(t, rowKeys(t, p, 21))
	require.Equal(t, []string{"k"}, rowKeys(t, p, 22))
	require.Equal(t, 2, <-sizes, "the two queued commits shared one transaction")
	sent, parts := b.Stats()
	require.EqualValues(t, 2, sent-sent0, "two round trips for three stores' commits")
	require.EqualValues(t, 3, parts-parts0)
	// The new owner's store on the same batcher writes the shard.
	s := openPostgres(t, PostgresOptions{Pool: p, Shard: 21, Guard: &PostgresGuard{Owner: "someone else", Epoch: 2}, Batcher: b})
	defer s.Close()
	require.NoError(t, s.Update(ctx, pgSet("k2", "v")))
	require.Equal(t, []string{"k2"}, rowKeys(t, p, 21))
}

// Each store's commits keep their order through the batcher: concurrent
// read-modify-write increments of one counter per store, over four stores
// sharing transactions, leave every increment in PostgreSQL, while the
// transactions carry several stores' parts each.
func TestPostgresBatcherKeepsEachStoresOrder(t *testing.T) {
	t.Parallel()
	p := pgPool(t, pgtest.URL(t))
	ctx := context.Background()
	b := NewPostgresBatcher(p, PostgresBatcherOptions{})
	defer b.Close()
	const stores, writers, each = 4, 8, 40
	var all []*Store
	for i := range stores {
		setOwner(t, p, 30+i, "me", 1)
		s := openPostgres(t, PostgresOptions{Pool: p, Shard: 30 + i, Guard: &PostgresGuard{Owner: "me", Epoch: 1}, Batcher: b})
		t.Cleanup(func() { s.Close() })
		all = append(all, s)
	}
	incr := func(tx *Txn) error {
		var n uint64
		v, ok, err := tx.Get([]byte("n"))
		if err != nil {
			return err
		}
		if ok {
			n = binary.BigEndian.Uint64(v)
		}
		return tx.Set([]byte("n"), binary.BigEndian.AppendUint64(nil, n+1))
	}
	var wg sync.WaitGroup
	for _, s := range all {
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					require.NoError(t, s.Update(ctx, incr))
				}
			}()
		}
	}
	wg.Wait()
	for i := range stores {
		var v []byte
		require.NoError(t, p.QueryRow(ctx, "SELECT v FROM tether.kv WHERE shard = $1 AND k = 'n'", 30+i).Scan(&v))
		require.EqualValues(t, writers*each, binary.BigEndian.Uint64(v), "shard %d", 30+i)
	}
	sent, parts := b.Stats()
	require.Greater(t, parts, sent, "transactions carried several stores' parts")
	t.Logf("%d increments over %d stores: %d transactions, %.1f parts each", stores*writers*each, stores, sent, float64(parts)/float64(sent))
}
