package message

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/internal/clock/clocktest"
)

func open(t *testing.T, dir string, clk *clocktest.Fake) (*graph.Store, *Service) {
	t.Helper()
	store, err := graph.Open(graph.Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	s, err := New(store)
	require.NoError(t, err)
	return store, s
}

func ids(vs []View) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Body
	}
	return out
}

// The inbox indexes are rebuilt from the records at New: order, unread
// counts, read state and expiries all come back after a restart.
func TestIndexesAreRebuiltAtOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store, s := open(t, dir, clk)
	send := func(p SendParams) *Record {
		p.Tenant, p.From = "acme", "head"
		r, err := s.Send(ctx, p)
		require.NoError(t, err)
		clk.Advance(time.Millisecond)
		return r
	}
	send(SendParams{To: "alice", Body: "low", Priority: -1})
	read := send(SendParams{To: "alice", Body: "read"})
	send(SendParams{To: "alice", Body: "soon gone", TTL: time.Minute})
	send(SendParams{To: "alice", Body: "high", Priority: 3, Thread: "t"})
	_, err := s.Ack(ctx, "acme", "alice", read.ID)
	require.NoError(t, err)
	require.EqualValues(t, 3, s.Unread("acme", "alice", ""))
	s.Close()
	require.NoError(t, store.Close())

	store, s = open(t, dir, clk)
	t.Cleanup(func() { s.Close(); require.NoError(t, store.Close()) })
	require.EqualValues(t, 3, s.Unread("acme", "alice", ""))
	page, next, err := s.Inbox(ctx, InboxParams{Tenant: "acme", Sub: "alice"})
	require.NoError(t, err)
	require.Empty(t, next)
	require.Equal(t, []string{"high", "read", "soon gone", "low"}, ids(page))
	page, _, err = s.Inbox(ctx, InboxParams{Tenant: "acme", Sub: "alice", Thread: "t"})
	require.NoError(t, err)
	require.Equal(t, []string{"high"}, ids(page))

	// The sweep counts the expiry on its own timer, with nobody reading.
	clk.Advance(time.Minute)
	require.Eventually(t, func() bool { return s.Stats().Expired.Load() == 1 }, 5*time.Second, time.Millisecond)
	require.EqualValues(t, 2, s.Unread("acme", "alice", ""))
	require.EqualValues(t, 1, s.Stats().Expired.Load(), "counted once")

	// A read message leaves the index Retention after it was read.
	clk.Advance(Retention)
	page, _, err = s.Inbox(ctx, InboxParams{Tenant: "acme", Sub: "alice"})
	require.NoError(t, err)
	require.Equal(t, []string{"high", "low"}, ids(page))
}
