package message

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/records"
)

// open opens the store in dir and starts the service on it; beforeStart
// runs between New and Start (a test enabling a signal it must not miss).
func open(t *testing.T, dir string, clk *clocktest.Fake, beforeStart ...func(*Service)) (*graphstore.Store, *Service) {
	t.Helper()
	store, err := graphstore.Open(graphstore.Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	s, err := New(store)
	require.NoError(t, err)
	for _, f := range beforeStart {
		f(s)
	}
	require.NoError(t, s.Start(context.Background()))
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
	s.Stop()
	require.NoError(t, store.Close())

	store, s = open(t, dir, clk)
	t.Cleanup(func() { s.Stop(); require.NoError(t, store.Close()) })
	require.EqualValues(t, 3, s.Unread("acme", "alice", ""))
	page, next, err := s.Inbox(ctx, InboxParams{Tenant: "acme", Sub: "alice"})
	require.NoError(t, err)
	require.Empty(t, next)
	require.Equal(t, []string{"high", "read", "soon gone", "low"}, ids(page))
	page, _, err = s.Inbox(ctx, InboxParams{Tenant: "acme", Sub: "alice", Thread: "t"})
	require.NoError(t, err)
	require.Equal(t, []string{"high"}, ids(page))

	// The sweep counts the expiry on its own timer, with nobody reading.
	s.TestSignals.Swept.Init(t)
	clk.Advance(time.Minute)
	s.TestSignals.Swept.Wait(t)
	require.EqualValues(t, 1, s.Stats().Expired.Load())
	require.EqualValues(t, 2, s.Unread("acme", "alice", ""))
	require.EqualValues(t, 1, s.Stats().Expired.Load(), "counted once")

	// A read message leaves the index Retention after it was read.
	clk.Advance(Retention)
	page, _, err = s.Inbox(ctx, InboxParams{Tenant: "acme", Sub: "alice"})
	require.NoError(t, err)
	require.Equal(t, []string{"high", "low"}, ids(page))
}

// A store where a node was removed without its messages expiring (a server
// older than gone.go, or any removal without the hook) heals at New: the
// unread messages to the missing node expire then, a read one stays read,
// and one to an identity is left alone.
func TestNewExpiresMessagesToRemovedNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store, s := open(t, dir, clk)
	require.NoError(t, store.Update(ctx, func(tx *graphstore.Tx) error {
		return tx.NodeInsert(&records.Node{
			Tenant: "acme", ID: "t1", Type: "task", Status: records.StatusOpen,
			Labels: []string{}, Props: map[string]any{}, MaxAttempts: 1,
			Usage: map[string]float64{}, UsageTotal: map[string]float64{}, OnChildFail: "fail",
		}, "head")
	}))
	sendTo := func(to, body string) *Record {
		r, err := s.Send(ctx, SendParams{Tenant: "acme", From: "head", To: to, Body: body})
		require.NoError(t, err)
		return r
	}
	lost, toAlice := sendTo("node:t1", "lost"), sendTo("alice", "for alice")
	s.Stop()
	require.NoError(t, store.Close())

	// The node goes on a store without the message service's hook.
	store, err := graphstore.Open(graphstore.Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	require.NoError(t, store.Update(ctx, func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet("acme", "t1")
		if err != nil {
			return err
		}
		return tx.NodeDelete(n, "head")
	}))
	require.NoError(t, store.Close())

	clk.Advance(time.Second)
	store, s = open(t, dir, clk, func(s *Service) { s.TestSignals.Swept.Init(t) })
	t.Cleanup(func() { s.Stop(); require.NoError(t, store.Close()) })
	v, err := s.Get(Viewer{Tenant: "acme", Sub: "head"}, lost.ID)
	require.NoError(t, err)
	require.Equal(t, StateExpired, v.State)
	require.True(t, v.ExpiresAt.Equal(clk.Now()), "expired when New found it")
	// New expired it at the fake clock's now, so the sweep Start arms is
	// due at once: its signal says it ran.
	s.TestSignals.Swept.Wait(t)
	require.EqualValues(t, 1, s.Stats().Expired.Load())
	v, err = s.Get(Viewer{Tenant: "acme", Sub: "head"}, toAlice.ID)
	require.NoError(t, err)
	require.Equal(t, StatePending, v.State, "a message to an identity is not a node's")
	require.EqualValues(t, 1, s.Unread("acme", "alice", ""))
}
