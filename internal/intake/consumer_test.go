package intake

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCommittedEnqueueBecomesClaimable(t *testing.T) {
	t.Parallel()
	s, pool := startTether(t), database(t)
	c := consume(t, pool, s.creator)
	ctx := context.Background()
	_, err := pool.Exec(ctx, "CREATE TABLE signups (email text PRIMARY KEY)")
	require.NoError(t, err)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO signups (email) VALUES ($1)", "a@example.com") // the application's own write
	require.NoError(t, err)
	var id int64
	require.NoError(t, tx.QueryRow(ctx, "SELECT tether.enqueue($1, $2)", "acme", `{"type":"email","queue":"mail","props":{"to":"a@example.com"}}`).Scan(&id))
	require.NoError(t, tx.Commit(ctx))

	got := s.claim(t, "acme", "mail", 10*time.Second)
	require.NotNil(t, got, "the committed row's node is claimable")
	require.Equal(t, "a@example.com", got.Props["to"])
	require.Equal(t, Subject, got.CreatedBy)
	waitCreated(t, c, id)
	require.Zero(t, rows(t, pool, "intake"), "the row is gone once its node is made")
}

func TestRolledBackEnqueueNeverMakesANode(t *testing.T) {
	t.Parallel()
	s, pool := startTether(t), database(t)
	c := consume(t, pool, s.creator)
	ctx := context.Background()

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT tether.enqueue($1, $2)", "acme", `{"type":"email","queue":"mail","props":{"n":"rolled back"}}`)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	// A row committed after it: once its node is made, every row committed
	// before was seen.
	after := enqueue(t, pool, "acme", `{"type":"email","queue":"mail","props":{"n":"committed"}}`)
	waitCreated(t, c, after)

	got := s.nodes(t, "acme", "mail")
	require.Len(t, got, 1)
	require.Equal(t, "committed", got[0].Props["n"])
	require.Zero(t, rows(t, pool, "intake"))
}
