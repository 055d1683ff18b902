package intake

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// signUp is the README's example (its lines are held to this file by
// TestREADMESnippetIsTheExample): the application's own row and the node it
// asks Tether for commit together, or neither does.
func signUp(ctx context.Context, pool *pgxpool.Pool, email string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) // a no-op once committed
	if _, err := tx.Exec(ctx, "INSERT INTO signups (email) VALUES ($1)", email); err != nil {
		return err
	}
	node := map[string]any{"type": "welcome", "queue": "mail", "props": map[string]any{"to": email}}
	if _, err := tx.Exec(ctx, "SELECT tether.enqueue($1, $2)", "acme", node); err != nil {
		return err // the signup is rolled back with it
	}
	return tx.Commit(ctx) // Tether makes the node once this commits
}

func TestREADMEExampleEnqueuesWithTheApplicationsWrite(t *testing.T) {
	t.Parallel()
	s, pool := startTether(t), database(t)
	consume(t, pool, s.creator)
	ctx := context.Background()
	_, err := pool.Exec(ctx, "CREATE TABLE signups (email text PRIMARY KEY)")
	require.NoError(t, err)

	require.NoError(t, signUp(ctx, pool, "a@example.com"))
	require.Error(t, signUp(ctx, pool, "a@example.com"), "a second signup fails, and enqueues nothing")
	require.NoError(t, signUp(ctx, pool, "b@example.com"))

	var to []any
	for range 2 {
		got := s.claim(t, "acme", "mail", 10*time.Second)
		require.NotNil(t, got)
		to = append(to, got.Props["to"])
	}
	require.ElementsMatch(t, []any{"a@example.com", "b@example.com"}, to)
	require.Nil(t, s.claim(t, "acme", "mail", 0), "the failed signup made no node")
}
