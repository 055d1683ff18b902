package message

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/records"
)

// deliveryRig is the message service, a lease service and one queued node
// n1, over a real store on a fake clock.
type deliveryRig struct {
	store  *graphstore.Store
	msgs   *Service
	leases *leasing.Service
	clk    *clocktest.Fake
}

func newDeliveryRig(t *testing.T) *deliveryRig {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store, err := graphstore.Open(graphstore.Options{Dir: t.TempDir(), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	// The service's background sweep is neither started nor stopped here
	// (it only frees memory): every rule tested holds by the store's
	// clock whether or not it runs.
	s, err := New(store)
	require.NoError(t, err)
	limits := func(context.Context, string) (leasing.Limits, error) {
		return leasing.Limits{TTLDefault: time.Minute, TTLMax: time.Hour}, nil
	}
	leases := leasing.New(leasing.Config{Store: store, Clock: clk, Limits: limits})
	require.NoError(t, store.Update(context.Background(), func(tx *graphstore.Tx) error {
		return tx.NodeInsert(&records.Node{
			Tenant: "acme", ID: "n1", Type: "task", Status: records.StatusQueued, Queue: "q",
			Labels: []string{}, Props: map[string]any{}, MaxAttempts: 5,
			Usage: map[string]float64{}, UsageTotal: map[string]float64{}, OnChildFail: "fail",
		}, "head")
	}))
	return &deliveryRig{store: store, msgs: s, leases: leases, clk: clk}
}

func (r *deliveryRig) inbox(t *testing.T, sub string) []string {
	t.Helper()
	page, _, err := r.msgs.Inbox(context.Background(), InboxParams{Tenant: "acme", Sub: sub})
	require.NoError(t, err)
	return ids(page)
}

func (r *deliveryRig) claim(t *testing.T, sub string) {
	t.Helper()
	_, err := r.leases.Claim(context.Background(), leasing.ClaimParams{Tenant: "acme", NodeID: "n1", By: sub})
	require.NoError(t, err)
}

// A message to a node reaches whoever holds the node's live lease when the
// inbox is read: not the holder that released it, not the one whose lease
// expired, and the next holder may acknowledge it; the node's events record
// the send and the read.
func TestNodeMessageFollowsTheHolder(t *testing.T) {
	t.Parallel()
	r := newDeliveryRig(t)
	ctx := context.Background()
	m, err := r.msgs.Send(ctx, SendParams{Tenant: "acme", From: "head", To: "node:n1", Body: "use the new key", TTL: time.Hour})
	require.NoError(t, err)
	require.Empty(t, r.inbox(t, "alice"), "nobody holds n1")

	r.claim(t, "alice")
	require.Equal(t, []string{"use the new key"}, r.inbox(t, "alice"))
	v, err := r.msgs.Get(Viewer{Tenant: "acme", Sub: "head"}, m.ID)
	require.NoError(t, err)
	require.Equal(t, StateDelivered, v.State)
	require.Equal(t, "alice", v.DeliveredTo)

	_, err = r.leases.Release(ctx, leasing.ReleaseParams{HolderParams: leasing.HolderParams{Tenant: "acme", NodeID: "n1", By: "alice"}})
	require.NoError(t, err)
	require.Empty(t, r.inbox(t, "alice"), "released: no longer hers")
	n, err := r.msgs.UnreadAll("acme", "alice")
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = r.msgs.Ack(ctx, "acme", "alice", m.ID)
	require.ErrorAs(t, err, new(*fault.NotFound))

	r.claim(t, "bob")
	require.Equal(t, []string{"use the new key"}, r.inbox(t, "bob"))
	r.clk.Advance(time.Minute) // bob's lease ends at its expiry, reaper or not
	require.Empty(t, r.inbox(t, "bob"), "expired: no longer his")
	_, err = r.msgs.Ack(ctx, "acme", "bob", m.ID)
	require.ErrorAs(t, err, new(*fault.NotFound))

	r.claim(t, "carol")
	n, err = r.msgs.UnreadAll("acme", "carol")
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	read, err := r.msgs.Ack(ctx, "acme", "carol", m.ID)
	require.NoError(t, err)
	require.Equal(t, StateRead, read.State)
	require.Equal(t, "carol", read.ReadBy)
	again, err := r.msgs.Ack(ctx, "acme", "carol", m.ID)
	require.NoError(t, err, "a second ack answers it unchanged")
	require.Equal(t, *read.ReadAt, *again.ReadAt)
	require.Zero(t, r.msgs.Unread("acme", "carol", "n1"))
	require.EqualValues(t, 1, r.msgs.Stats().Read.Load())

	var types []records.EventType
	require.NoError(t, r.store.View(func(tx *graphstore.Tx) error {
		evs, err := tx.NodeEvents("acme", "n1", 0, 100)
		for _, e := range evs {
			if e.Type == EventSent || e.Type == EventRead {
				types = append(types, e.Type)
			}
		}
		return err
	}))
	require.Equal(t, []records.EventType{EventSent, EventRead}, types)
}

// A message whose ttl passes unread is expired at that instant: no inbox
// lists it, no count includes it, no ack takes it, and its sender sees it
// expired. One read before the ttl keeps it.
func TestMessageTTLExpiry(t *testing.T) {
	t.Parallel()
	r := newDeliveryRig(t)
	ctx := context.Background()
	gone, err := r.msgs.Send(ctx, SendParams{Tenant: "acme", From: "head", To: "alice", Body: "gone soon", TTL: time.Minute})
	require.NoError(t, err)
	kept, err := r.msgs.Send(ctx, SendParams{Tenant: "acme", From: "head", To: "alice", Body: "read in time", TTL: time.Minute})
	require.NoError(t, err)
	_, err = r.msgs.Send(ctx, SendParams{Tenant: "acme", From: "head", To: "alice", Body: "no ttl"})
	require.NoError(t, err)
	require.EqualValues(t, 3, r.msgs.Unread("acme", "alice", ""))
	_, err = r.msgs.Ack(ctx, "acme", "alice", kept.ID)
	require.NoError(t, err)

	r.clk.Advance(time.Minute - time.Millisecond)
	require.EqualValues(t, 2, r.msgs.Unread("acme", "alice", ""))
	r.clk.Advance(time.Millisecond)

	require.ElementsMatch(t, []string{"read in time", "no ttl"}, r.inbox(t, "alice"))
	require.EqualValues(t, 1, r.msgs.Unread("acme", "alice", ""))
	_, err = r.msgs.Ack(ctx, "acme", "alice", gone.ID)
	require.ErrorAs(t, err, new(*fault.NotFound))
	v, err := r.msgs.Get(Viewer{Tenant: "acme", Sub: "head"}, gone.ID)
	require.NoError(t, err)
	require.Equal(t, StateExpired, v.State)
	v, err = r.msgs.Get(Viewer{Tenant: "acme", Sub: "alice"}, kept.ID)
	require.NoError(t, err)
	require.Equal(t, StateRead, v.State)
	require.EqualValues(t, 1, r.msgs.Stats().Expired.Load(), "counted once")
	r.inbox(t, "alice")
	require.EqualValues(t, 1, r.msgs.Stats().Expired.Load())
}

// An inbox long poll that finds nothing waits, and wakes when a message to
// its reader is durable; a message to someone else does not answer it; a
// poll with nothing to wake it ends empty when its wait runs out.
func TestInboxLongPollWakes(t *testing.T) {
	t.Parallel()
	r := newDeliveryRig(t)
	ctx := context.Background()
	type answer struct {
		bodies []string
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		page, _, err := r.msgs.Inbox(ctx, InboxParams{Tenant: "acme", Sub: "alice", Wait: time.Minute})
		got <- answer{ids(page), err}
	}()
	r.waitForPoller(t)
	_, err := r.msgs.Send(ctx, SendParams{Tenant: "acme", From: "head", To: "bob", Body: "for bob"})
	require.NoError(t, err)
	_, err = r.msgs.Send(ctx, SendParams{Tenant: "acme", From: "head", To: "alice", Body: "wake up"})
	require.NoError(t, err)
	a := <-got
	require.NoError(t, a.err)
	require.Equal(t, []string{"wake up"}, a.bodies)

	page, next, err := r.msgs.Inbox(ctx, InboxParams{Tenant: "acme", Sub: "carol", Wait: time.Millisecond})
	require.NoError(t, err)
	require.Empty(t, page)
	require.Empty(t, next)
}

// waitForPoller returns once an inbox long poll of tenant acme has
// subscribed to its wake-ups (the hub holds its channel).
func (r *deliveryRig) waitForPoller(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.msgs.hub.mu.Lock()
		_, ok := r.msgs.hub.waiters["acme"]
		r.msgs.hub.mu.Unlock()
		if ok {
			return
		}
		require.True(t, time.Now().Before(deadline), "no long poll subscribed")
		runtime.Gosched()
	}
}
