package kv

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/pgtest"
)

// TestEnginesShowEagerWritesOnceApplied: with the log held (nothing becomes
// durable), an UpdateEager of a key readers see as it was is answered and
// shown at once; a plain write is shown only once durable, even one to the
// same key after the shown one; and an UpdateEager of a key whose last write
// is not durable yet is neither answered nor shown before that write is, so it
// never shows the earlier write early. Once the log goes on, every write is
// read as the writer left it.
func TestEnginesShowEagerWritesOnceApplied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, ec := range []struct {
		name string
		open func(t *testing.T) *Store
	}{
		{"badger", func(t *testing.T) *Store {
			s, err := Open(Options{Dir: dir})
			require.NoError(t, err)
			return s
		}},
		{"etcd", func(t *testing.T) *Store {
			c := sharedEtcd(t)
			s, err := OpenEtcd(EtcdOptions{Client: etcdClient(t, c), Prefix: storePrefix(c, "shown")})
			require.NoError(t, err)
			return s
		}},
		{"postgres", func(t *testing.T) *Store {
			s, err := OpenPostgres(PostgresOptions{Pool: pgPool(t, pgtest.URL(t)), Schema: "tether", Shard: 1})
			require.NoError(t, err)
			return s
		}},
	} {
		t.Run(ec.name, func(t *testing.T) {
			t.Parallel()
			var hold logHold
			s := ec.open(t)
			s.beforeDurable = hold.wait
			s.Start()
			defer s.Close()
			checkShown(t, s, &hold)
		})
	}
}

// logHold holds a store's logger before its next durable step (its
// beforeDurable), from hold until release.
type logHold struct{ ch atomic.Pointer[chan struct{}] }

func (h *logHold) hold() {
	ch := make(chan struct{})
	h.ch.Store(&ch)
}

func (h *logHold) release() {
	if ch := h.ch.Swap(nil); ch != nil {
		close(*ch)
	}
}

func (h *logHold) wait() {
	if ch := h.ch.Load(); ch != nil {
		<-*ch
	}
}

func checkShown(t *testing.T, s *Store, hold *logHold) {
	ctx := context.Background()
	set := func(key, val string) func(*Txn) error {
		return func(tx *Txn) error { return tx.Set([]byte(key), []byte(val)) }
	}
	// inBackground starts update(fn) and returns once fn has been applied,
	// with the channel its answer comes on.
	inBackground := func(update func(context.Context, func(*Txn) error) error, fn func(*Txn) error) <-chan error {
		applied := make(chan struct{})
		answer := make(chan error, 1)
		go func() {
			answer <- update(ctx, func(tx *Txn) error {
				tx.OnApply(func() { close(applied) })
				return fn(tx)
			})
		}()
		<-applied
		return answer
	}
	answered := func(ch <-chan error, what string) {
		t.Helper()
		select {
		case err := <-ch:
			require.NoError(t, err, what)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no answer in 30 s", what)
		}
	}
	requireRead := func(key, want string, what string) {
		t.Helper()
		v, ok := get(t, s, key)
		if want == "" {
			require.False(t, ok, "%s: %s reads %q", what, key, v)
			return
		}
		require.True(t, ok, "%s: %s reads nothing", what, key)
		require.Equal(t, want, v, what)
	}

	require.NoError(t, s.Update(ctx, set("lease", "claimed")))
	hold.hold()
	defer hold.release()

	answered(inBackground(s.UpdateEager, set("lease", "renewed")), "a renewal of a durable claim")
	requireRead("lease", "renewed", "a renewal answered")

	other := inBackground(s.Update, set("other", "x"))
	requireRead("other", "", "a plain write applied, not durable")

	done := inBackground(s.Update, set("lease", "done"))
	requireRead("lease", "renewed", "a plain write after a shown one, not durable")

	claim2 := inBackground(s.Update, set("lease2", "claimed"))
	renew2 := inBackground(s.UpdateEager, set("lease2", "renewed"))
	// The writer answers an eager write right after applying it, before it
	// takes the next request: once a later one is answered, renew2 would be.
	answered(inBackground(s.UpdateEager, set("lease3", "renewed")), "a renewal of a key never written")
	select {
	case err := <-renew2:
		t.Fatalf("a renewal of a claim not yet durable was answered (%v) before the claim was durable", err)
	default:
	}
	requireRead("lease2", "", "a renewal of a claim not yet durable")
	requireRead("lease3", "renewed", "a renewal of a key never written")

	hold.release()
	for i, ch := range []<-chan error{other, done, claim2, renew2} {
		answered(ch, fmt.Sprintf("write %d once the log goes on", i))
	}
	requireRead("lease", "done", "after the log went on")
	requireRead("lease2", "renewed", "after the log went on")
	requireRead("other", "x", "after the log went on")
	require.NoError(t, s.Update(ctx, set("lease", "reclaimed")))
	requireRead("lease", "reclaimed", "a later durable write")
}

// TestAShownWriteThenAPlainOneInOneSegment: a renewal and then a complete
// of the same key, applied in one segment: readers see the renewal until the
// segment is durable, then the complete, never the complete early.
func TestAShownWriteThenAPlainOneInOneSegment(t *testing.T) {
	t.Parallel()
	s, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	var hold logHold
	s.beforeDurable = hold.wait
	s.Start()
	defer s.Close()
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("lease"), []byte("claimed")) }))

	hold.hold()
	defer hold.release()
	// Hold the writer too, so that both writes queue and are applied in one
	// segment once it goes on.
	busy, free := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.UpdateEager(ctx, func(tx *Txn) error {
			close(busy)
			<-free
			return nil
		})
	}()
	<-busy
	queued := func(n int) {
		for len(s.reqs) < n {
			runtime.Gosched()
		}
	}
	renew, done := make(chan error, 1), make(chan error, 1)
	var renewTxn, doneTxn uint64
	go func() {
		renew <- s.UpdateEager(ctx, func(tx *Txn) error {
			renewTxn = tx.id
			return tx.Set([]byte("lease"), []byte("renewed"))
		})
	}()
	queued(1)
	go func() {
		done <- s.Update(ctx, func(tx *Txn) error {
			doneTxn = tx.id
			return tx.Set([]byte("lease"), []byte("done"))
		})
	}()
	queued(2)
	close(free)
	require.NoError(t, <-renew)
	v, _ := get(t, s, "lease")
	require.Equal(t, "renewed", v, "the complete is not durable yet")
	select {
	case err := <-done:
		t.Fatalf("the complete was answered (%v) before it was durable", err)
	default:
	}
	hold.release()
	require.NoError(t, <-done)
	require.Equal(t, renewTxn+1, doneTxn, "the two writes ran one after the other")
	v, _ = get(t, s, "lease")
	require.Equal(t, "done", v)
}
