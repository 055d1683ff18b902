package cluster

import (
	"context"
	"log/slog"
	"time"

	"github.com/tether-run/tether/internal/kv"
)

// The cluster's logic (the front, forwarding, the view, hand-overs, the
// freshness rule) is the same whatever keeps the members and the shard
// owners; a coordinator is that keeper: etcd (etcd.go) or PostgreSQL
// (postgres.go). Each must give:
//
//   - a session per server, kept alive by renewals the keeper answers; the
//     session's owner learns of every answered renewal (renewed, with the
//     instant the renewal's request was sent or earlier) and of the
//     session's end (done);
//   - one owner per shard at a time, elected only once the last owner
//     resigned or its session ended, a new term each time;
//   - a fence: a shard's store opened for a term fails every write once the
//     term is over, so a deposed owner never commits;
//   - watches that publish the live members, the leaving ones, and each
//     shard's owner whose session is live.

// coordinator keeps the cluster's members and shard owners.
type coordinator interface {
	// store names the store in messages (etcd, PostgreSQL).
	store() string
	// checkShards stores the shard count when the cluster has none yet,
	// and refuses another count than the stored one.
	checkShards(ctx context.Context, shards int) error
	// join starts a session and registers this server (its advertise URL,
	// leaving or not) as a member on it; renewed is told of every renewal.
	join(ctx context.Context, advertise string, leaving bool, renewed func(sent time.Time)) (session, error)
	// watch publishes the members, the leaving members and the shards'
	// owners as they change, until ctx ends.
	watch(ctx context.Context, publish func(edit func(v *view)))
	// ready is nil when the store answers and can take writes.
	ready(ctx context.Context) error
	// backupAdvice tells an operator how to back the records up.
	backupAdvice() string
	// close releases what the coordinator holds once every shard is closed.
	close()
}

// session is one server's membership, from join until it ends.
type session interface {
	// id is the server's id in the cluster while the session lasts.
	id() string
	// done is closed when the session ended under the server (expired,
	// revoked, or no renewal answered for a lease TTL).
	done() <-chan struct{}
	// markLeaving marks the member as leaving (Shutdown).
	markLeaving(ctx context.Context) error
	// campaign waits until this server is elected owner of shard k, or ctx
	// ends (an error).
	campaign(ctx context.Context, k int) (term, error)
	// end ends the session: its membership and every shard it still owns
	// go at once. nil when they are gone (or were already).
	end(timeout time.Duration) error
}

// term is one election of this server as a shard's owner.
type term interface {
	// number identifies the term in logs (etcd's election revision,
	// PostgreSQL's epoch).
	number() int64
	// current says whether the term still holds (false when the store
	// cannot tell).
	current(ctx context.Context) bool
	// resign ends the term, so that the shard's next owner may be elected.
	resign(ctx context.Context) error
	// openStore opens the shard's kv store fenced by this term: every write
	// fails once the term is over, and onDeposed runs once when one does.
	openStore(log *slog.Logger, onDeposed func()) (*kv.Store, error)
}
