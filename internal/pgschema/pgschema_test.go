package pgschema

import (
	"context"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func pool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), pgtest.URL(t))
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func allVersions() []int {
	var vs []int
	for _, m := range Migrations() {
		vs = append(vs, m.Version)
	}
	return vs
}

// Migrate applies every migration once; Check refuses the schema before and
// takes it after.
func TestMigrateAppliesEveryMigrationOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := pool(t)
	var behind *ErrBehind
	err := Check(ctx, p, "tether")
	require.ErrorAs(t, err, &behind)
	require.Equal(t, ErrBehind{Schema: "tether", Current: 0, Want: Version()}, *behind)
	require.Contains(t, err.Error(), "version 0")

	applied, err := Migrate(ctx, p, "tether")
	require.NoError(t, err)
	require.Equal(t, allVersions(), applied)
	require.NoError(t, Check(ctx, p, "tether"))
	applied, err = Migrate(ctx, p, "tether")
	require.NoError(t, err)
	require.Empty(t, applied)
	cur, err := Current(ctx, p, "tether")
	require.NoError(t, err)
	require.Equal(t, Version(), cur)
}

// The store's tables are there with the columns the engine and the cluster
// rely on.
func TestStoreSchemaHasItsTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := pool(t)
	_, err := Migrate(ctx, p, "ts")
	require.NoError(t, err)
	columns := func(table string) []string {
		rows, err := p.Query(ctx, "SELECT column_name || ' ' || data_type || ' ' || is_nullable FROM information_schema.columns WHERE table_schema = 'ts' AND table_name = $1 ORDER BY ordinal_position", table)
		require.NoError(t, err)
		var cols []string
		for rows.Next() {
			var c string
			require.NoError(t, rows.Scan(&c))
			cols = append(cols, c)
		}
		require.NoError(t, rows.Err())
		return cols
	}
	require.Equal(t, []string{"shard integer NO", "k bytea NO", "v bytea NO", "expires_at bigint NO"}, columns("kv"))
	require.Equal(t, []string{"name text NO", "value text NO"}, columns("meta"))
	require.Equal(t, []string{"id text NO", "url text NO", "leaving boolean NO", "expires_at timestamp with time zone NO"}, columns("members"))
	require.Equal(t, []string{"shard integer NO", "owner text YES", "epoch bigint NO", "since timestamp with time zone YES"}, columns("shard_owners"))
	require.Equal(t, []string{"version integer NO", "applied_at timestamp with time zone NO"}, columns("schema_migrations"))
}

// Servers migrating at once apply each migration once between them.
func TestConcurrentMigratesApplyEachOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := pgtest.URL(t)
	const servers = 4
	results := make([][]int, servers)
	var wg sync.WaitGroup
	for i := range servers {
		p, err := pgxpool.New(ctx, u)
		require.NoError(t, err)
		t.Cleanup(p.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied, err := Migrate(ctx, p, "tether")
			require.NoError(t, err)
			results[i] = applied
		}()
	}
	wg.Wait()
	var all []int
	for _, r := range results {
		all = append(all, r...)
	}
	require.ElementsMatch(t, allVersions(), all)
}

// A migration that fails leaves nothing of itself; those before it stay.
func TestFailedMigrationLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := pool(t)
	ms := []Migration{
		{Version: 1, Name: "0001_a.sql", SQL: "CREATE SCHEMA IF NOT EXISTS {{schema}}; CREATE TABLE {{schema}}.a (x int);"},
		{Version: 2, Name: "0002_b.sql", SQL: "CREATE TABLE {{schema}}.b (x int); SELECT no_such_function();"},
	}
	applied, err := migrate(ctx, p, "tf", ms)
	require.Error(t, err)
	require.Contains(t, err.Error(), "0002_b.sql")
	require.Equal(t, []int{1}, applied)
	var n int
	require.NoError(t, p.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'tf' AND table_name = 'b'").Scan(&n))
	require.Zero(t, n, "the failed migration's table is not there")
	cur, err := Current(ctx, p, "tf")
	require.NoError(t, err)
	require.Equal(t, 1, cur)
}

// Schemas are independent: two Tethers may share a database.
func TestSchemasAreIndependent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := pool(t)
	_, err := Migrate(ctx, p, "one")
	require.NoError(t, err)
	var behind *ErrBehind
	require.ErrorAs(t, Check(ctx, p, "two"), &behind)
	applied, err := Migrate(ctx, p, "two")
	require.NoError(t, err)
	require.Equal(t, allVersions(), applied)
}

// A schema name that is not a plain identifier is refused before anything
// is sent.
func TestSchemaNameIsValidated(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "Tether", "1x", "a-b", "a;drop table x", `a"b`, "a.b", "x234567890123456789012345678901234567890123456789012345678901234"} {
		require.Error(t, ValidSchema(bad), bad)
		_, err := Migrate(context.Background(), nil, bad)
		require.Error(t, err, bad)
	}
	for _, good := range []string{"tether", "_x", "t_2", "x23456789012345678901234567890123456789012345678901234567890123"} {
		require.NoError(t, ValidSchema(good), good)
	}
}

// The embedded files load in order; names without a version, and gaps, are
// refused.
func TestLoadOrdersAndRefusesGaps(t *testing.T) {
	t.Parallel()
	ms := Migrations()
	require.Equal(t, "0001_store.sql", ms[0].Name)
	for i, m := range ms {
		require.Equal(t, i+1, m.Version)
	}
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	got, err := load(fstest.MapFS{"migrations/0002_b.sql": file("b"), "migrations/0001_a.sql": file("a")})
	require.NoError(t, err)
	require.Equal(t, []Migration{{1, "0001_a.sql", "a"}, {2, "0002_b.sql", "b"}}, got)
	_, err = load(fstest.MapFS{"migrations/0001_a.sql": file("a"), "migrations/0003_c.sql": file("c")})
	require.Error(t, err)
	_, err = load(fstest.MapFS{"migrations/a.sql": file("a")})
	require.Error(t, err)
	_, err = load(fstest.MapFS{"migrations/0001_a.sql": file("a"), "migrations/0001_b.sql": file("b")})
	require.Error(t, err)
}
