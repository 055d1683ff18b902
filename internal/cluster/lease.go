package cluster

import (
	"context"
	"time"
)

// A server serves its shards only while it knows its session lease is alive
// in etcd, so that an owner deposed without knowing it (paused, or cut off
// from etcd, past its lease) does not answer even a read from its memory
// once another server may own the shard. etcd renewed the lease at some
// instant between a keepalive's request and its answer, and keeps it a TTL
// from then; taking the answer's arrival as that instant and trusting only
// half the TTL after it is safe while a keepalive's round trip takes less
// than half the TTL (and the clocks of this machine and etcd's leader run at
// about the same rate). Keepalives go out every third of the TTL, so a live
// server's lease stays fresh with a sixth of the TTL to spare.
//
// On PostgreSQL the session is the member row, whose expires_at each
// renewal sets to the database's now() + TTL: that now() is no earlier
// than the renewal's request was sent, so trusting half the TTL after the
// sending is safe by the same reasoning, with the database's clock as the
// one clock that decides expiry.

// renewed notes that the store renewed (or granted) the session lease no
// earlier than at.
func (n *Node) renewed(at time.Time) {
	n.leaseUntil.Store(at.Add(n.cfg.LeaseTTL / 2).UnixNano())
}

// leaseFresh reports whether the session lease is surely alive in the
// store.
func (n *Node) leaseFresh() bool {
	return time.Now().UnixNano() < n.leaseUntil.Load()
}

// awaitFresh reports whether the session lease was alive at the moment of
// the call: at once when it is known fresh, else once a keepalive answer
// arrives (etcd renewed a lease it still held, which it cannot have
// expired before, so it was alive at the call); false when none arrives
// within a lease TTL or ctx ends first.
func (n *Node) awaitFresh(ctx context.Context) bool {
	deadline := time.Now().Add(n.cfg.LeaseTTL)
	for !n.leaseFresh() {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}
