package message

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/records"
)

// A message to a node and a message to an identity live in separate
// boxes. Authentication refuses a subject that spells a node's address, so
// only a call from inside the server could ask as "node:n1"; even then it
// is nobody's recipient: it lists, counts, sees and acknowledges nothing,
// and the message waits for the identity that claims the node. The same
// holds for the indexes rebuilt from the stored records at a restart.
func TestANodeAddressIsNoIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	store, s := open(t, dir, clk)
	require.NoError(t, store.Update(ctx, func(tx *graphstore.Tx) error {
		return tx.NodeInsert(&records.Node{
			Tenant: "acme", ID: "n1", Type: "task", Status: records.StatusOpen,
			Labels: []string{}, Props: map[string]any{}, MaxAttempts: 1,
			Usage: map[string]float64{}, UsageTotal: map[string]float64{}, OnChildFail: "fail",
		}, "head")
	}))
	m, err := s.Send(ctx, SendParams{Tenant: "acme", From: "head", To: "node:n1", Body: "secret deploy key"})
	require.NoError(t, err)
	_, err = s.Send(ctx, SendParams{Tenant: "acme", From: "head", To: "alice", Body: "for alice"})
	require.NoError(t, err)

	// After a restart too, as the indexes are rebuilt from the records.
	s.Stop()
	require.NoError(t, store.Close())
	store, s = open(t, dir, clk)
	limits := func(context.Context, string) (leasing.Limits, error) {
		return leasing.Limits{TTLDefault: time.Minute, TTLMax: time.Hour}, nil
	}
	leases := leasing.New(leasing.Config{Store: store, Limits: limits})
	require.NoError(t, leases.Start(ctx))
	t.Cleanup(func() { leases.Stop(); s.Stop(); require.NoError(t, store.Close()) })

	const lookAlike = "node:n1"
	page, _, err := s.Inbox(ctx, InboxParams{Tenant: "acme", Sub: lookAlike})
	require.NoError(t, err)
	require.Empty(t, page)
	require.Zero(t, s.Unread("acme", lookAlike, ""))
	n, err := s.UnreadAll("acme", lookAlike)
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = s.Get(Viewer{Tenant: "acme", Sub: lookAlike}, m.ID)
	require.ErrorAs(t, err, new(*fault.NotFound))
	_, err = s.Ack(ctx, "acme", lookAlike, m.ID)
	require.ErrorAs(t, err, new(*fault.NotFound))
	v, err := s.Get(Viewer{Tenant: "acme", Sub: "head"}, m.ID)
	require.NoError(t, err)
	require.Equal(t, StatePending, v.State, "untouched")

	// Before alice holds n1 she has only her own message; once she does,
	// the node's is hers too, and she can acknowledge it.
	page, _, err = s.Inbox(ctx, InboxParams{Tenant: "acme", Sub: "alice"})
	require.NoError(t, err)
	require.Equal(t, []string{"for alice"}, ids(page))
	_, err = leases.Claim(ctx, leasing.ClaimParams{Tenant: "acme", NodeID: "n1", By: "alice"})
	require.NoError(t, err)
	require.EqualValues(t, 2, s.Unread("acme", "alice", "n1"))
	page, _, err = s.Inbox(ctx, InboxParams{Tenant: "acme", Sub: "alice", Unread: true})
	require.NoError(t, err)
	require.Equal(t, []string{"secret deploy key", "for alice"}, ids(page))
	read, err := s.Ack(ctx, "acme", "alice", m.ID)
	require.NoError(t, err)
	require.Equal(t, "alice", read.ReadBy)
	_, err = s.Ack(ctx, "acme", lookAlike, m.ID)
	require.ErrorAs(t, err, new(*fault.NotFound), "still nobody's but the holder's")
}

// Send refuses an identity address that starts with a reserved prefix, and
// says which; nothing is stored.
func TestSendRefusesReservedIdentityAddresses(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store, s := open(t, t.TempDir(), clk)
	t.Cleanup(func() { s.Stop(); require.NoError(t, store.Close()) })
	for to, prefix := range map[string]string{"identity:alice": "identity:", "schedule:nightly": "schedule:"} {
		_, err := s.Send(context.Background(), SendParams{Tenant: "acme", From: "head", To: to, Body: "x"})
		var bad *fault.Invalid
		require.ErrorAs(t, err, &bad, to)
		require.Equal(t, "to", bad.Field)
		require.Contains(t, bad.Reason, `"`+prefix+`"`)
		require.Zero(t, s.Unread("acme", to, ""))
	}
	require.Zero(t, s.Stats().Sent.Load())
}
