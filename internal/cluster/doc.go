// Package cluster runs Tether on many servers over one etcd cluster or one
// PostgreSQL database: the tenants are split over a fixed number of shards,
// each shard is a whole Tether (server.Open over the shard's own store)
// owned by exactly one server at a time, and every server's front handler
// serves a request itself when it owns the tenant's shard or passes it to
// the owner.
//
// The members and the shards' owners are kept by a coordinator (coord.go):
// etcd (etcd.go) or PostgreSQL (postgres.go). The rules below are the same
// on both; where they name etcd's lease, election and keys, PostgreSQL has
// the member row (expiring by the database's clock), the owner row with its
// epoch, and the shard's kv rows, each write checking the owner row.
//
// Keys under Config.Prefix (etcd):
//
//	meta/shards               the shard count, written once by the first server
//	members/<id>              = advertise URL, on the server's session lease
//	leaving/<id>              the member is stopping, on its session lease
//	shards/<NN>/owner/<id>    the shard's election (concurrency.Election)
//	s/<NN>/...                the shard's records (its kv store)
//
// Tables of Config.Schema (PostgreSQL, internal/pgschema):
//
//	meta('shards')            the shard count, written once by the first server
//	members(id, url, leaving, expires_at)   a session: renewed to now() + TTL
//	shard_owners(shard, owner, epoch, since) the shard's owner and its term
//	kv(shard, k, v, expires_at)             the shard's records
//
// Invariants:
//   - The shard count never changes: a server started with another count
//     than meta/shards refuses to start, naming both.
//   - tenant -> shard is fnv32a(tenant) % Shards, the same on every server.
//   - A server serves a shard only while it is the shard's elected owner on
//     its live session: the shard's store carries the guard
//     CreateRevision(election key) == election revision in every write, so
//     a deposed owner can never commit; when its session ends or its store
//     breaks, it closes the shard's server before anything else.
//   - A server closes its shard server (draining the requests it is
//     serving) before it resigns the shard, so two servers never serve one
//     shard at once. An owner deposed without knowing it (paused or cut
//     off past its lease) stops serving, reads included, once half the
//     lease TTL has passed since etcd last answered a keepalive (lease.go),
//     which is before etcd can expire the lease; a write it had already
//     begun fails the guard.
//   - The desired owner of a shard is the live member, not leaving, of
//     highest rendezvous weight fnv64a(advertise URL, shard). A server
//     campaigns for the shards it is desired for, and (unless it is
//     leaving) for a shard without an owner for longer than a lease TTL; an
//     owner that is not the desired one hands the shard over (closes, then
//     resigns).
//   - A server that stops (Shutdown) first marks itself leaving: /ready
//     answers 503, every server drops it from the desired owners, so the
//     next owners campaign at once, and it hands its shards over one by
//     one as above while it still forwards. It revokes its session only
//     then, and closes its front once no API request has come for a second
//     (quietPeriod).
//   - An owner's answer goes out only while its session lease is surely
//     alive (fresh.go): checked when the status line is written, after the
//     work, so every renewal it answered was applied before a new owner
//     could be elected, and the new owner's leasing.Service.Start gives every
//     lease that renewal may have touched its full TTL from then on. No
//     lease ends before the expiry its holder was last told.
//   - A request is never forwarded by the server it was forwarded to: one
//     that arrives with X-Tether-Forwarded for a shard another server owns
//     is answered 421 misdirected when its sender can send it again
//     (X-Tether-Reroutes: it kept the body), else 503 unavailable with
//     Retry-After. A sender that gets 421, or cannot dial the owner,
//     has had nothing done and routes the request again by its own view.
//   - A request waits for its shard to be served (a hand-over or an
//     election in progress, or the servers' views catching up) at most
//     10 s (handoverWait), and at most 2 s (orphanWait) of them while the
//     shard has no owner it can reach (a takeover from a server that died
//     takes a lease TTL); then it is answered 503 with Retry-After.
//   - Of the member keys of one advertise URL only the newest counts: an
//     older one is a session of the same server that ended while etcd could
//     not expire or revoke its lease. An owner that is not a live member is
//     no owner to route to; its key goes with its lease, which the server
//     revokes as soon as etcd answers again.
//   - The server id is the session's (on etcd the lease id in hex, on
//     PostgreSQL a random one): it names the member and the shards it
//     owns, and changes when a new session starts.
//   - On PostgreSQL a shard is taken only when it has no owner or its
//     owner's member row is gone or expired, by the database's clock (one
//     clock for every server), and each taking starts a new epoch; the
//     taking UPDATE waits for the old owner's writes in flight (each holds
//     the owner row FOR SHARE while it checks its epoch), so none of them
//     commits after it. An expired member row is never renewed again.
//     Nothing waits on a notification: every server reads members and
//     shard_owners every poll interval (a sixth of the TTL, 100-250 ms).
//   - A shard's records live in etcd under <prefix>s/NN/ (kv.OpenEtcd,
//     store.go), every write guarded by its election.
//   - The shards served here share one kv.EtcdBatcher: commits of several
//     shards that fall together go to etcd as one transaction, each shard's
//     part under its own guard, so a deposed shard's part fails alone; a
//     shard still has one transaction in flight at a time (Config.Pipeline
//     1), so its commits keep its order.
//   - On PostgreSQL the shards served here share one kv.PostgresBatcher
//     the same way: commits of several shards that fall together are one
//     transaction, each shard's part under its own guard.
//   - The front's /metrics is the server's own series and each shard's,
//     labelled shard, read from the shard servers' registries: an anonymous
//     scrape gets the process-wide ones, a scrape token (api.Scrapers) or
//     the metrics listener (ServeMetrics) every one.
package cluster
