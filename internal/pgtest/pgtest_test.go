package pgtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Main(m) }

// Two tests' databases are distinct and empty; a database is gone after its
// test.
func TestURLGivesEveryTestItsOwnDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var first string
	t.Run("first", func(t *testing.T) {
		first = URL(t)
		conn, err := pgx.Connect(ctx, first)
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "CREATE TABLE t (k int)")
		require.NoError(t, err)
	})
	second := URL(t)
	require.NotEqual(t, first, second)
	conn, err := pgx.Connect(ctx, second)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 't'").Scan(&n))
	require.Zero(t, n, "the second database is empty")
	var db string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&db))
	var exists bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", dbName(t, first)).Scan(&exists))
	require.False(t, exists, "the first test's database was dropped")
	var fsync string
	require.NoError(t, conn.QueryRow(ctx, "SHOW fsync").Scan(&fsync))
	require.Equal(t, "on", fsync)
}

func dbName(t *testing.T, u string) string {
	cfg, err := pgx.ParseConfig(u)
	require.NoError(t, err)
	return cfg.Database
}

// A server of a test's own keeps what was committed across a kill -9 and a
// restart on the same port.
func TestServerKillKeepsCommittedRows(t *testing.T) {
	t.Parallel()
	s := Start(t)
	u := s.URL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE t (k int PRIMARY KEY)")
	require.NoError(t, err)
	for i := range 50 {
		_, err = conn.Exec(ctx, "INSERT INTO t VALUES ($1)", i)
		require.NoError(t, err)
	}
	port := s.Port
	s.Kill()
	_, err = conn.Exec(ctx, "SELECT 1")
	require.Error(t, err, "the server is gone")
	require.NoError(t, s.Restart())
	require.Equal(t, port, s.Port)
	conn, err = pgx.Connect(ctx, u)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n))
	require.Equal(t, 50, n, fmt.Sprintf("rows after kill -9 of %s", s))
}

// With TETHER_TEST_POSTGRES_URL set, URL makes its databases on that
// server, and drops them after the test.
func TestURLUsesTheServerTheVariableNames(t *testing.T) {
	s := Start(t)
	t.Setenv(EnvURL, s.url("postgres"))
	ctx := context.Background()
	var name string
	t.Run("inner", func(t *testing.T) {
		u := URL(t)
		cfg, err := pgx.ParseConfig(u)
		require.NoError(t, err)
		require.EqualValues(t, s.Port, cfg.Port)
		name = cfg.Database
		conn, err := pgx.Connect(ctx, u)
		require.NoError(t, err)
		require.NoError(t, conn.Close(ctx))
	})
	conn, err := pgx.Connect(ctx, s.url("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var exists bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists))
	require.False(t, exists, "the database was dropped")
}
