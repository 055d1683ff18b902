package intake

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

func TestRefusedRowMovesToIntakeFailed(t *testing.T) {
	t.Parallel()
	s, pool := startTether(t), database(t)
	c := consume(t, pool, s.creator, func(cfg *Config) { cfg.BatchSize = 1 })
	bad := enqueue(t, pool, "acme", `{"type":"email","queue":"mail","colour":"red"}`)
	good := enqueue(t, pool, "acme", `{"type":"email","queue":"mail"}`)

	var failed []int64
	for len(failed) == 0 {
		failed = c.TestSignals.Committed.Wait(t).Failed
	}
	require.Equal(t, []int64{bad}, failed)
	waitCreated(t, c, good)
	require.NotNil(t, s.claim(t, "acme", "mail", time.Second), "the row behind the bad one was made")

	var status int
	var reason, tenant, node string
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT status, error, tenant, node::text FROM tether.intake_failed WHERE id = $1", bad).Scan(&status, &reason, &tenant, &node))
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, reason, "colour", "the refusal names the field")
	require.Equal(t, "acme", tenant)
	require.JSONEq(t, `{"type":"email","queue":"mail","colour":"red"}`, node)
	require.Zero(t, rows(t, pool, "intake"))
	require.Len(t, s.nodes(t, "acme", "mail"), 1, "the refused row made nothing")
}

func TestRowsStayInTheirTenant(t *testing.T) {
	t.Parallel()
	s, pool := startTether(t), database(t)
	c := consume(t, pool, s.creator)
	a := enqueue(t, pool, "tenant-a", `{"type":"email","queue":"mail","props":{"for":"a"}}`)
	b := enqueue(t, pool, "tenant-b", `{"type":"email","queue":"mail","props":{"for":"b"}}`)
	waitCreated(t, c, a, b)

	for tenant, want := range map[string]string{"tenant-a": "a", "tenant-b": "b"} {
		got := s.nodes(t, tenant, "mail")
		require.Len(t, got, 1, tenant)
		require.Equal(t, want, got[0].Props["for"], tenant)
	}
	require.Empty(t, s.nodes(t, "tenant-c", "mail"))
}

func TestEnqueueRefusesBadArguments(t *testing.T) {
	t.Parallel()
	pool := database(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		tenant any
		node   string
		want   string
	}{
		"empty tenant":      {"", `{}`, "tenant: must match"},
		"upper-case tenant": {"Acme", `{}`, "tenant: must match"},
		"null tenant":       {nil, `{}`, "tenant: must match"},
		"array node":        {"acme", `[1]`, "node: must be a JSON object, got array"},
		"string node":       {"acme", `"x"`, "node: must be a JSON object, got string"},
		"huge node":         {"acme", `{"props":{"x":"` + strings.Repeat("x", 1<<20) + `"}}`, "node: must be at most 1048576 bytes"},
	} {
		_, err := pool.Exec(ctx, "SELECT tether.enqueue($1, $2)", tc.tenant, tc.node)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, name)
		require.Equal(t, "22023", pgErr.Code, name) // invalid_parameter_value
		require.Contains(t, pgErr.Message, tc.want, name)
	}
	// A plain INSERT is held to the same bounds by the table.
	for name, tc := range map[string]struct{ tenant, node, constraint string }{
		"tenant": {"Acme", `{}`, "intake_tenant_format"},
		"object": {"acme", `[1]`, "intake_node_object"},
	} {
		_, err := pool.Exec(ctx, "INSERT INTO tether.intake (tenant, node) VALUES ($1, $2)", tc.tenant, tc.node)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, name)
		require.Equal(t, tc.constraint, pgErr.ConstraintName, name)
	}
	require.Zero(t, rows(t, pool, "intake"), "a refused enqueue leaves nothing")
}
