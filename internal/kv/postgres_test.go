package kv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/pgschema"
	"github.com/tether-run/tether/internal/pgtest"
)

// pgPool is a pool on the database at url, migrated, closed when t ends.
func pgPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	_, err = pgschema.Migrate(context.Background(), p, "tether")
	require.NoError(t, err)
	return p
}

func openPostgres(t *testing.T, opts PostgresOptions) *Store {
	t.Helper()
	if opts.Schema == "" {
		opts.Schema = "tether"
	}
	s, err := OpenPostgres(opts)
	require.NoError(t, err)
	s.Start()
	return s
}

// pgReopener opens, on every call, the store of one database of the
// test's own (made on the first call).
func pgReopener() func(t *testing.T) *Store {
	var url string
	return func(t *testing.T) *Store {
		if url == "" {
			url = pgtest.URL(t)
		}
		return openPostgres(t, PostgresOptions{Pool: pgPool(t, url), Shard: 1})
	}
}

// setOwner makes owner the shard's owner at epoch, as a takeover does.
func setOwner(t *testing.T, p *pgxpool.Pool, shard int, owner string, epoch int64) {
	t.Helper()
	_, err := p.Exec(context.Background(), `INSERT INTO tether.shard_owners (shard, owner, epoch, since) VALUES ($1, $2, $3, now())
		ON CONFLICT (shard) DO UPDATE SET owner = excluded.owner, epoch = excluded.epoch, since = excluded.since`, shard, owner, epoch)
	require.NoError(t, err)
}

// rowKeys are the keys of shard in the table, in the table's order.
func rowKeys(t *testing.T, p *pgxpool.Pool, shard int) []string {
	t.Helper()
	rows, err := p.Query(context.Background(), "SELECT k FROM tether.kv WHERE shard = $1 ORDER BY k", shard)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k []byte
		require.NoError(t, rows.Scan(&k))
		out = append(out, string(k))
	}
	require.NoError(t, rows.Err())
	return out
}

func pgSet(key, val string) func(*Txn) error {
	return func(tx *Txn) error { return tx.Set([]byte(key), []byte(val)) }
}

// A takeover (the owner row's epoch bumped) makes the old owner's next
// write fail: nothing of it is written, the store breaks and OnDeposed runs
// once. A store opened with a guard already false does not open.
func TestPostgresGuardDeposesTheOldOwner(t *testing.T) {
	t.Parallel()
	p := pgPool(t, pgtest.URL(t))
	setOwner(t, p, 3, "a", 1)
	deposed := make(chan struct{}, 2)
	s := openPostgres(t, PostgresOptions{Pool: p, Shard: 3, Guard: &PostgresGuard{Owner: "a", Epoch: 1}, OnDeposed: func() { deposed <- struct{}{} }})
	defer s.Close()
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, pgSet("k1", "v")))
	setOwner(t, p, 3, "b", 2)
	require.ErrorIs(t, s.Update(ctx, pgSet("k2", "v")), fault.ErrUnavailable)
	require.False(t, s.Healthy())
	require.ErrorIs(t, s.Update(ctx, pgSet("k3", "v")), fault.ErrUnavailable)
	<-deposed
	select {
	case <-deposed:
		t.Fatal("OnDeposed ran twice")
	default:
	}
	require.Equal(t, []string{"k1"}, rowKeys(t, p, 3))

	_, err := OpenPostgres(PostgresOptions{Pool: p, Schema: "tether", Shard: 3, Guard: &PostgresGuard{Owner: "a", Epoch: 1}})
	require.ErrorIs(t, err, ErrDeposed)
	s2 := openPostgres(t, PostgresOptions{Pool: p, Shard: 3, Guard: &PostgresGuard{Owner: "b", Epoch: 2}})
	defer s2.Close()
	require.NoError(t, s2.Update(ctx, pgSet("k4", "v")))
	require.Equal(t, []string{"k1", "k4"}, rowKeys(t, p, 3))
}

// waitLocked waits until a session runs a statement starting with prefix
// and waits for a lock.
func waitLocked(t *testing.T, p *pgxpool.Pool, prefix string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, p.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1", prefix+"%").Scan(&n))
		return n > 0
	}, 20*time.Second, 10*time.Millisecond) // PostgreSQL's sessions are another process: polling is the only signal
}

// A write in flight during a takeover either commits before it or fails:
// a write holding the guard's row lock makes the takeover wait and commits;
// a write whose guard waits behind the takeover fails once it commits.
func TestPostgresWriteInFlightDuringTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := pgPool(t, pgtest.URL(t))
	setOwner(t, p, 4, "a", 1)
	s := openPostgres(t, PostgresOptions{Pool: p, Shard: 4, Guard: &PostgresGuard{Owner: "a", Epoch: 1}})
	defer s.Close()
	require.NoError(t, s.Update(ctx, pgSet("held", "v0")))

	// 1. The write holds the guard (FOR SHARE) and waits on a row the test
	// locked; the takeover waits for the write.
	lock, err := p.Begin(ctx)
	require.NoError(t, err)
	_, err = lock.Exec(ctx, "SELECT 1 FROM tether.kv WHERE shard = 4 AND k = 'held' FOR UPDATE")
	require.NoError(t, err)
	first := make(chan error, 1)
	go func() { first <- s.Update(ctx, pgSet("held", "v1")) }()
	waitLocked(t, p, "INSERT INTO tether.kv")
	takeover := make(chan error, 1)
	go func() {
		_, err := p.Exec(ctx, "UPDATE tether.shard_owners SET owner = 'b', epoch = epoch + 1 WHERE shard = 4")
		takeover <- err
	}()
	waitLocked(t, p, "UPDATE tether.shard_owners")
	require.NoError(t, lock.Rollback(ctx))
	require.NoError(t, <-first, "the write that held the guard commits")
	require.NoError(t, <-takeover)
	var v string
	require.NoError(t, p.QueryRow(ctx, "SELECT convert_from(v, 'UTF8') FROM tether.kv WHERE shard = 4 AND k = 'held'").Scan(&v))
	require.Equal(t, "v1", v)
	require.ErrorIs(t, s.Update(ctx, pgSet("after", "v")), fault.ErrUnavailable, "the old owner's next write fails")

	// 2. The takeover holds the owner row; the write's guard waits for it
	// and then finds the row changed.
	setOwner(t, p, 5, "a", 1)
	s5 := openPostgres(t, PostgresOptions{Pool: p, Shard: 5, Guard: &PostgresGuard{Owner: "a", Epoch: 1}})
	defer s5.Close()
	tk, err := p.Begin(ctx)
	require.NoError(t, err)
	_, err = tk.Exec(ctx, "UPDATE tether.shard_owners SET owner = 'b', epoch = epoch + 1 WHERE shard = 5")
	require.NoError(t, err)
	second := make(chan error, 1)
	go func() { second <- s5.Update(ctx, pgSet("late", "v")) }()
	waitLocked(t, p, "SELECT 1 FROM tether.shard_owners")
	require.NoError(t, tk.Commit(ctx))
	require.ErrorIs(t, <-second, fault.ErrUnavailable, "the write behind the takeover fails")
	require.Empty(t, rowKeys(t, p, 5))
}

// Scans order keys bytewise, 0x00 and 0xff included, forward and reverse,
// under a prefix of 0xff bytes too (which has no end key).
func TestPostgresScansOrderBytewise(t *testing.T) {
	t.Parallel()
	s := openPostgres(t, PostgresOptions{Pool: pgPool(t, pgtest.URL(t)), Shard: 1})
	defer s.Close()
	keys := []string{"\x00", "\x00\x00", "\x00\xff", "a", "a\x00", "a\x00\x00", "a\x01", "a\x7f", "a\x80", "a\xff", "a\xff\x00", "a\xff\xff", "b", "\xff", "\xff\x00", "\xff\xff", "\xff\xff\xff"}
	ctx := context.Background()
	shuffled := slices.Clone(keys)
	slices.Reverse(shuffled)
	require.NoError(t, s.Update(ctx, func(tx *Txn) error {
		for _, k := range shuffled {
			if err := tx.Set([]byte(k), []byte("v"+k)); err != nil {
				return err
			}
		}
		return nil
	}))
	scan := func(prefix string, after []byte, reverse bool) []string {
		var got []string
		require.NoError(t, s.View(func(tx *Txn) error {
			return tx.Scan([]byte(prefix), after, reverse, true, func(k, v []byte) (bool, error) {
				require.Equal(t, "v"+string(k), string(v))
				got = append(got, string(k))
				return true, nil
			})
		}))
		return got
	}
	under := func(p string) []string {
		var out []string
		for _, k := range keys {
			if len(k) >= len(p) && k[:len(p)] == p {
				out = append(out, k)
			}
		}
		return out
	}
	rev := func(ks []string) []string { r := slices.Clone(ks); slices.Reverse(r); return r }
	for _, p := range []string{"", "\x00", "a", "a\x00", "a\xff", "\xff", "\xff\xff"} {
		require.Equal(t, under(p), scan(p, nil, false), "prefix %q", p)
		require.Equal(t, rev(under(p)), scan(p, nil, true), "prefix %q reverse", p)
	}
	require.Equal(t, []string{"a\x00\x00", "a\x01", "a\x7f", "a\x80", "a\xff", "a\xff\x00", "a\xff\xff"}, scan("a", []byte("a\x00"), false))
	require.Equal(t, []string{"a\x00", "a"}, scan("a", []byte("a\x00\x00"), true))
	require.Equal(t, []string{"\xff\xff", "\xff\x00", "\xff"}, scan("\xff", []byte("\xff\xff\xff"), true))
}

// The cleaner deletes expired rows in bounded batches and leaves live ones
// and keys written again.
func TestPostgresCleanerDeletesExpiredRows(t *testing.T) {
	t.Parallel()
	p := pgPool(t, pgtest.URL(t))
	s, err := OpenPostgres(PostgresOptions{Pool: p, Schema: "tether", Shard: 2})
	require.NoError(t, err)
	e := s.eng.(*postgresEngine)
	s.Start()
	defer s.Close()
	ctx := context.Background()
	const n = postgresCleanBatch + 500
	require.NoError(t, s.Update(ctx, func(tx *Txn) error {
		for i := range n {
			if err := tx.SetTTL(fmt.Appendf(nil, "x/%05d", i), []byte("v"), time.Second); err != nil {
				return err
			}
		}
		return errors.Join(tx.SetTTL([]byte("live"), []byte("v"), time.Hour), tx.Set([]byte("plain"), []byte("v")))
	}))
	later := time.Now().Add(2 * time.Second)
	got, err := e.clean(later)
	require.NoError(t, err)
	require.EqualValues(t, postgresCleanBatch, got, "one batch is bounded")
	got, err = e.clean(later)
	require.NoError(t, err)
	require.EqualValues(t, 500, got)
	require.Equal(t, []string{"live", "plain"}, rowKeys(t, p, 2))
}

// Every key acknowledged before PostgreSQL is killed (-9, every process at
// once) mid-load is there after it restarts, in a store opened again.
func TestPostgresKillLosesNothingAcknowledged(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	url := srv.URL(t)
	p := pgPool(t, url)
	s := openPostgres(t, PostgresOptions{Pool: p, Shard: 1})
	ctx := context.Background()
	var mu sync.Mutex
	var acked []string
	var count atomic.Int64
	enough := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				k := fmt.Sprintf("w%02d/%06d", w, i)
				if err := s.Update(ctx, pgSet(k, k)); err != nil {
					return
				}
				mu.Lock()
				acked = append(acked, k)
				mu.Unlock()
				if count.Add(1) == 2000 {
					once.Do(func() { close(enough) })
				}
			}
		}()
	}
	<-enough
	srv.Kill()
	wg.Wait()
	require.False(t, s.Healthy())
	require.NoError(t, s.Close())
	require.NoError(t, srv.Restart())

	p2, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer p2.Close()
	s = openPostgres(t, PostgresOptions{Pool: p2, Shard: 1})
	defer s.Close()
	require.NoError(t, s.View(func(tx *Txn) error {
		for _, k := range acked {
			v, ok, err := tx.Get([]byte(k))
			require.NoError(t, err)
			require.True(t, ok, "acknowledged key %s lost", k)
			require.Equal(t, k, string(v))
		}
		return nil
	}))
	t.Logf("%d writes acknowledged before the kill, all kept", len(acked))
}

// A View reads one instant: a write committed between two of its reads is
// not seen by the second.
func TestPostgresViewReadsOneInstant(t *testing.T) {
	t.Parallel()
	p := pgPool(t, pgtest.URL(t))
	s := openPostgres(t, PostgresOptions{Pool: p, Shard: 1})
	defer s.Close()
	ctx := context.Background()
	// Written behind the store's back, so that the reads go to PostgreSQL
	// (the store shows its own recent writes from its overlays).
	_, err := p.Exec(ctx, "INSERT INTO tether.kv (shard, k, v) VALUES (1, 'a', '1')")
	require.NoError(t, err)
	require.NoError(t, s.View(func(tx *Txn) error {
		v, _, err := tx.Get([]byte("a"))
		require.NoError(t, err)
		require.Equal(t, "1", string(v))
		_, err = p.Exec(ctx, "INSERT INTO tether.kv (shard, k, v) VALUES (1, 'b', 'x')")
		require.NoError(t, err)
		ok, err := tx.Has([]byte("b"))
		require.NoError(t, err)
		require.False(t, ok, "the View's second read saw a later commit")
		return nil
	}))
}

// Many concurrent writers share commits: each group is one transaction
// sent in one round trip. Logs the writes per second on pgtest's server.
func TestPostgresGroupCommitOneRoundTripPerGroup(t *testing.T) {
	t.Parallel()
	p := pgPool(t, pgtest.URL(t))
	s, err := OpenPostgres(PostgresOptions{Pool: p, Schema: "tether", Shard: 1})
	require.NoError(t, err)
	e := s.eng.(*postgresEngine)
	s.Start()
	defer s.Close()
	ctx := context.Background()
	// Warm the statement cache: a statement's first use prepares it (a
	// round trip of its own).
	require.NoError(t, s.Update(ctx, pgSet("warm", "v")))
	require.NoError(t, s.Update(ctx, func(tx *Txn) error { return tx.Delete([]byte("warm")) }))
	base := e.sends.Load()
	syncs0, batches0 := s.Stats().Syncs.Load(), s.Stats().Batches.Load()
	const writers, each = 32, 100
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				require.NoError(t, s.Update(ctx, pgSet(fmt.Sprintf("g/%02d/%04d", w, i), "v")))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	sends := e.sends.Load() - base
	groups := s.Stats().Syncs.Load() - syncs0
	txns := s.Stats().Batches.Load() - batches0
	require.Equal(t, txns, sends, "one round trip per transaction")
	require.Equal(t, groups, txns, "one transaction per group")
	require.Less(t, groups, int64(writers*each), "writes share commits")
	t.Logf("%d writes by %d writers in %v: %.0f writes/s, %d groups (%.1f writes each), %.2f round trips per group",
		writers*each, writers, elapsed, float64(writers*each)/elapsed.Seconds(), groups, float64(writers*each)/float64(groups), float64(sends)/float64(groups))
}

// A value as large as Badger takes is kept whole, and an empty one; a
// larger one is refused.
func TestPostgresLargestValue(t *testing.T) {
	t.Parallel()
	p := pgPool(t, pgtest.URL(t))
	s := openPostgres(t, PostgresOptions{Pool: p, Shard: 1})
	ctx := context.Background()
	big := make([]byte, postgresMaxValue)
	for i := range big {
		big[i] = byte(i)
	}
	require.NoError(t, s.Update(ctx, func(tx *Txn) error {
		return errors.Join(tx.Set([]byte("big"), big), tx.Set([]byte("empty"), nil))
	}))
	require.Error(t, s.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("bigger"), make([]byte, postgresMaxValue+1)) }))
	require.NoError(t, s.Close())

	s = openPostgres(t, PostgresOptions{Pool: p, Shard: 1})
	defer s.Close()
	require.NoError(t, s.View(func(tx *Txn) error {
		v, ok, err := tx.Get([]byte("big"))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, big, v)
		v, ok, err = tx.Get([]byte("empty"))
		require.NoError(t, err)
		require.True(t, ok)
		require.Empty(t, v)
		ok, err = tx.Has([]byte("bigger"))
		require.NoError(t, err)
		require.False(t, ok)
		return nil
	}))
}

// Connections the server ends while the pool holds them idle (a restart of
// PostgreSQL, an administrator) do not break the store: a commit or a read
// that finds one dead did not run, and runs again on another connection.
func TestPostgresSurvivesConnectionsTheServerEnded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	pgPool(t, url) // migrated
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 3
	// No ping before a connection is handed out: the store meets the dead
	// ones itself.
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer p.Close()
	s := openPostgres(t, PostgresOptions{Pool: p, Shard: 1})
	defer s.Close()
	_, err = p.Exec(ctx, "INSERT INTO tether.kv (shard, k, v) VALUES (1, 'outside', 'v')")
	require.NoError(t, err)
	for round := range 3 {
		// Fill the pool with idle connections, then end them all.
		var conns []*pgxpool.Conn
		for range 3 {
			c, err := p.Acquire(ctx)
			require.NoError(t, err)
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Release()
		}
		admin, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		var ended int
		require.NoError(t, admin.QueryRow(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()").Scan(&ended))
		require.NoError(t, admin.Close(ctx))
		require.Positive(t, ended)
		if round%2 == 0 {
			require.NoError(t, s.Update(ctx, pgSet(fmt.Sprintf("r%d", round), "v")), "round %d", round)
		}
		require.NoError(t, s.View(func(tx *Txn) error {
			ok, err := tx.Has([]byte("outside"))
			require.True(t, ok)
			return err
		}), "round %d", round)
		require.True(t, s.Healthy())
	}
	require.Equal(t, []string{"outside", "r0", "r2"}, rowKeys(t, p, 1))
}
