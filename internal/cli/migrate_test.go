package cli

import (
	"bytes"
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/pgschema"
	"github.com/tether-run/tether/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// runMigrate runs `tether migrate` and returns its output.
func runMigrate(t *testing.T) (string, error) {
	t.Helper()
	root := NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"migrate"})
	err := root.Execute()
	return out.String(), err
}

// tether migrate applies every migration to TETHER_POSTGRES_SCHEMA and says
// which; a second run applies none.
func TestMigrateAppliesTheSchemaOnce(t *testing.T) {
	url := pgtest.URL(t)
	t.Setenv("TETHER_POSTGRES_URL", url)
	t.Setenv("TETHER_POSTGRES_SCHEMA", "tm")
	out, err := runMigrate(t)
	require.NoError(t, err)
	want := ""
	for _, m := range pgschema.Migrations() {
		want += "applied " + m.Name[:len(m.Name)-len(".sql")] + "\n"
	}
	require.Equal(t, want+"schema tm is at version "+strconv.Itoa(pgschema.Version())+"\n", out)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM tm.kv").Scan(&n), "the store's table is there")

	out, err = runMigrate(t)
	require.NoError(t, err)
	require.Equal(t, "schema tm is up to date at version "+strconv.Itoa(pgschema.Version())+"\n", out)
}

// Without a URL, or with a schema name that is not an identifier, migrate
// is a usage error that names the variable, and touches nothing.
func TestMigrateRefusesBadSettings(t *testing.T) {
	t.Setenv("TETHER_POSTGRES_URL", "")
	_, err := runMigrate(t)
	require.ErrorContains(t, err, "TETHER_POSTGRES_URL is not set")
	require.Equal(t, 2, exitCode(err))

	t.Setenv("TETHER_POSTGRES_URL", "postgres://127.0.0.1:1/x")
	t.Setenv("TETHER_POSTGRES_SCHEMA", "Bad-Name")
	_, err = runMigrate(t)
	require.ErrorContains(t, err, "TETHER_POSTGRES_SCHEMA")
	require.Equal(t, 2, exitCode(err))
}
