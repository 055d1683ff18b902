package message

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The sweep's heap holds one deadline per message: its expiry while it is
// unread, moved to Retention after its read when it is read. An unread
// message that falls due has expired and is counted; a read one is only
// let go.
func TestSweepExpiresUnreadAndForgetsRead(t *testing.T) {
	t.Parallel()
	var expired int
	ix := newIndex(func() { expired++ })
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	msg := func(id string, created time.Time) placed {
		return placedOf("acme", &Record{ID: id, To: "alice", CreatedAt: created})
	}
	gone, kept := msg("gone", t0), msg("kept", t0.Add(time.Millisecond))
	ix.add(gone, false, t0.Add(time.Minute))
	ix.add(kept, false, t0.Add(time.Minute))
	ix.add(msg("forever", t0.Add(2*time.Millisecond)), false, time.Time{})
	ix.markRead(kept, t0.Add(30*time.Second).Add(Retention))
	require.EqualValues(t, 2, ix.unread(identityBox("acme", "alice")))
	require.Equal(t, 2, ix.due.Len(), "one deadline per message that ever leaves; none for one kept until read")

	require.Equal(t, t0.Add(time.Minute), ix.sweep(t0.Add(time.Minute-time.Nanosecond)), "nothing due yet")
	require.Equal(t, t0.Add(30*time.Second).Add(Retention), ix.sweep(t0.Add(time.Minute)))
	require.Equal(t, 1, expired, "the unread one expired")
	require.EqualValues(t, 1, ix.unread(identityBox("acme", "alice")), "the one without ttl is left")
	require.Len(t, ix.pick(identityBox("acme", "alice"), "", false, nil, 10), 2, "the read one is kept for its retention")

	require.True(t, ix.sweep(t0.Add(30*time.Second).Add(Retention)).IsZero(), "nothing else leaves")
	require.Equal(t, 1, expired, "letting a read message go is no expiry")
	require.Len(t, ix.pick(identityBox("acme", "alice"), "", false, nil, 10), 1)
}

// A message to a node that is removed is placed again to leave at once
// (gone.go): its deadline moves earlier, and the sweep expires it once.
func TestAddAgainMovesTheDeadline(t *testing.T) {
	t.Parallel()
	var expired int
	ix := newIndex(func() { expired++ })
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := placedOf("acme", &Record{ID: "m", To: "node:n1", CreatedAt: t0})
	ix.add(p, false, t0.Add(time.Hour))
	ix.add(p, false, t0.Add(time.Second))
	require.Equal(t, 1, ix.due.Len())
	require.True(t, ix.sweep(t0.Add(time.Second)).IsZero())
	require.Equal(t, 1, expired)
	require.Zero(t, ix.unread(nodeBox("acme", "n1")))
}
