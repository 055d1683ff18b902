// Package pgfailover runs a highly available PostgreSQL for tests: a
// pg_auto_failover formation on this machine, made of a monitor, a primary
// and a synchronous secondary, each a `pg_autoctl ... --run` process with
// its Postgres in a temporary directory on loopback ports. A test kills the
// primary's node with KillNode and waits with WaitPrimary for the monitor to
// promote the secondary, to prove what a client of the database sees across
// a failover. Without pg_autoctl (Debian's postgresql-NN-auto-failover) the
// test is skipped through internal/testskip.
//
// The formation's timeouts are cut from pg_auto_failover's defaults (20 s
// before a node is unhealthy, 30 s for a primary to demote) to a few
// seconds, so that a failover takes about ten seconds instead of a minute.
//
// Invariants:
//   - Every formation is stopped when its test ends: each node runs in a
//     process group of its own, and Stop kills the groups and removes the
//     directory. (A test binary killed outright takes the pg_autoctl
//     processes with it, by their parent-death signal, but not their
//     Postgres servers, which run on until stopped by hand.)
//   - The secondary is synchronous (pg_auto_failover's default with one
//     standby and replication quorum on): a commit the primary acknowledged
//     is on the secondary, so a promotion loses no acknowledged write.
//   - URL is a multi-host URL with target_session_attrs=read-write: a client
//     reaches whichever node is the writable primary, never a standby.
//   - PostgreSQL refuses to run as root: as root, the programs run as the
//     postgres user, and the formation's directory belongs to that user.
package pgfailover
