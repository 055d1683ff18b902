package cluster

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/pgschema"
	"github.com/tether-run/tether/internal/pgtest"
)

// migratedPool is a pool on a fresh, migrated database.
func migratedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.URL(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pgschema.Migrate(context.Background(), pool, DefaultSchema)
	require.NoError(t, err)
	return pool
}

// pgCoordinator is a PostgreSQL coordinator of shards shards over pool.
func pgCoordinator(t *testing.T, pool *pgxpool.Pool, shards int, ttl time.Duration) *postgresCoordinator {
	t.Helper()
	cfg, err := Config{Postgres: pool, Shards: shards, LeaseTTL: ttl, Advertise: "http://127.0.0.1:1", Logger: slog.New(slog.DiscardHandler)}.withDefaults()
	require.NoError(t, err)
	c, err := newPostgresCoordinator(cfg)
	require.NoError(t, err)
	t.Cleanup(c.close)
	require.NoError(t, c.checkShards(context.Background(), shards))
	return c
}

// pgJoin starts a session at url; it ends with the test.
func pgJoin(t *testing.T, c *postgresCoordinator, url string) *postgresSession {
	t.Helper()
	s, err := c.join(context.Background(), url, false, func(time.Time) {})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.end(5 * time.Second) })
	return s.(*postgresSession)
}

// expire stops s's renewals and moves its row's expiry into the past, by
// the database's clock, as a lease TTL without renewals would.
func expire(t *testing.T, pool *pgxpool.Pool, s *postgresSession) {
	t.Helper()
	s.stop()
	_, err := pool.Exec(context.Background(), `UPDATE tether.members SET expires_at = now() - interval '1 second' WHERE id = $1`, s.sid)
	require.NoError(t, err)
}

func TestPostgresShardCountIsFixed(t *testing.T) {
	pool := migratedPool(t)
	pgCoordinator(t, pool, 4, DefaultLeaseTTL)
	c := pgCoordinator(t, pool, 4, DefaultLeaseTTL) // the same count again
	err := c.checkShards(context.Background(), 5)
	require.ErrorContains(t, err, "has 4 shards")
	require.ErrorContains(t, err, "started with 5")
	var rows int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM tether.shard_owners`).Scan(&rows))
	require.Equal(t, 4, rows)
}

// TestPostgresShardTakenOnlyFromTheDead: a shard with a live owner cannot
// be taken; it can once the owner resigns or its session expires, each time
// with a new epoch, and a renewal never brings an expired session back.
func TestPostgresShardTakenOnlyFromTheDead(t *testing.T) {
	pool := migratedPool(t)
	c := pgCoordinator(t, pool, 2, DefaultLeaseTTL)
	a, b := pgJoin(t, c, "http://a:1"), pgJoin(t, c, "http://b:1")
	ctx := context.Background()

	ta, err := a.campaign(ctx, 0)
	require.NoError(t, err)
	require.EqualValues(t, 1, ta.number())
	require.True(t, ta.current(ctx))

	short, cancel := context.WithTimeout(ctx, 3*c.poll)
	_, err = b.campaign(short, 0)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "b took a shard whose owner lives")

	require.NoError(t, ta.resign(ctx))
	require.False(t, ta.current(ctx))
	tb, err := b.campaign(ctx, 0)
	require.NoError(t, err)
	require.EqualValues(t, 2, tb.number())

	expire(t, pool, b)
	tag, err := pool.Exec(ctx, `UPDATE tether.members SET expires_at = now() + interval '5 seconds' WHERE id = $1 AND expires_at > now()`, b.sid)
	require.NoError(t, err)
	require.Zero(t, tag.RowsAffected(), "an expired session was renewed")
	ta, err = a.campaign(ctx, 0)
	require.NoError(t, err)
	require.EqualValues(t, 3, ta.number())
	require.False(t, tb.current(ctx))

	// A session that expired takes nothing.
	short, cancel = context.WithTimeout(ctx, 3*c.poll)
	_, err = b.campaign(short, 1)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "an expired session took a shard")
}

// TestPostgresTakeoverFencesWritesInFlight: a write of the old owner that
// checked its epoch (FOR SHARE, as kv.OpenPostgres does) before the
// takeover commits before the takeover does; one that checks after finds
// its epoch gone.
func TestPostgresTakeoverFencesWritesInFlight(t *testing.T) {
	pool := migratedPool(t)
	c := pgCoordinator(t, pool, 1, DefaultLeaseTTL)
	a, b := pgJoin(t, c, "http://a:1"), pgJoin(t, c, "http://b:1")
	ctx := context.Background()
	ta, err := a.campaign(ctx, 0)
	require.NoError(t, err)
	guard := func(tx pgx.Tx) bool {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM tether.shard_owners WHERE shard = 0 AND owner = $1 AND epoch = $2 FOR SHARE`, a.sid, ta.number()).Scan(&one)
		return err == nil
	}

	inFlight, err := pool.Begin(ctx)
	require.NoError(t, err)
	require.True(t, guard(inFlight))
	_, err = inFlight.Exec(ctx, `INSERT INTO tether.kv (shard, k, v) VALUES (0, 'old', 'x')`)
	require.NoError(t, err)

	expire(t, pool, a)
	var mu sync.Mutex
	var order []string
	taken := make(chan int64, 1)
	go func() {
		tb, err := b.campaign(ctx, 0)
		if err != nil {
			taken <- -1
			return
		}
		mu.Lock()
		order = append(order, "takeover")
		mu.Unlock()
		taken <- tb.number()
	}()
	// The takeover waits for the write in flight: the write commits first.
	select {
	case <-taken:
		t.Fatal("the takeover committed while the old owner's write was in flight")
	case <-time.After(5 * c.poll):
	}
	mu.Lock()
	order = append(order, "old write")
	mu.Unlock()
	require.NoError(t, inFlight.Commit(ctx))
	require.EqualValues(t, 2, <-taken)
	require.Equal(t, []string{"old write", "takeover"}, order)

	late, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = late.Rollback(ctx) }()
	require.False(t, guard(late), "the old epoch still passes its guard")
}

// TestPostgresWatchShowsLiveMembersAndOwners: the view has the live
// members, the leaving ones, and the owners that are live members; a dead
// member's row is deleted by the watcher.
func TestPostgresWatchShowsLiveMembersAndOwners(t *testing.T) {
	pool := migratedPool(t)
	c := pgCoordinator(t, pool, 3, DefaultLeaseTTL)
	a, b := pgJoin(t, c, "http://a:1"), pgJoin(t, c, "http://b:1")
	ctx := context.Background()
	_, err := a.campaign(ctx, 0)
	require.NoError(t, err)
	_, err = b.campaign(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, b.markLeaving(ctx))

	views := make(chan *view, 16)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go c.watch(wctx, func(edit func(v *view)) {
		v := &view{}
		edit(v)
		views <- v
	})
	v := <-views
	require.Equal(t, map[string]string{a.sid: "http://a:1", b.sid: "http://b:1"}, v.members)
	require.Equal(t, map[string]bool{b.sid: true}, v.leaving)
	require.Equal(t, []owner{{id: a.sid, url: "http://a:1", rev: 1}, {id: b.sid, url: "http://b:1", rev: 1}, {}}, v.owners)

	expire(t, pool, b)
	v = <-views
	require.Equal(t, map[string]string{a.sid: "http://a:1"}, v.members)
	require.Empty(t, v.leaving)
	require.Equal(t, owner{}, v.owners[1], "a dead member is nobody's owner")
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM tether.members`).Scan(&n))
		return n == 1
	}, 10*time.Second, c.poll)
}

// TestPostgresSessionEnds: a session whose row is gone ends; ending a
// session frees its shards and its row at once.
func TestPostgresSessionEnds(t *testing.T) {
	pool := migratedPool(t)
	c := pgCoordinator(t, pool, 1, time.Second)
	ctx := context.Background()
	a := pgJoin(t, c, "http://a:1")
	_, err := a.campaign(ctx, 0)
	require.NoError(t, err)
	require.NoError(t, a.end(time.Second))
	var owner *string
	require.NoError(t, pool.QueryRow(ctx, `SELECT owner FROM tether.shard_owners WHERE shard = 0`).Scan(&owner))
	require.Nil(t, owner)

	b := pgJoin(t, c, "http://b:1")
	_, err = pool.Exec(ctx, `DELETE FROM tether.members WHERE id = $1`, b.sid)
	require.NoError(t, err)
	select {
	case <-b.done():
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not end when its row went")
	}
}
