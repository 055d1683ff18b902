package intake

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stretchr/testify/require"
)

// errCrash stands for a crash after the creates and before the commit.
var errCrash = errors.New("crashed before the rows were deleted")

func TestCrashBetweenCreateAndDeleteMakesOneNode(t *testing.T) {
	t.Parallel()
	s, pool := startTether(t), database(t)
	ctx := context.Background()
	id := enqueue(t, pool, "acme", `{"type":"email","queue":"mail"}`)

	// The first consumer makes the node, then dies before its transaction
	// commits: the row is still there, unlocked.
	crashed := make(chan struct{})
	first, err := New(Config{Pool: pool, Schema: schema, Creator: s.creator})
	require.NoError(t, err)
	first.beforeCommit = func(context.Context) error {
		select {
		case <-crashed:
		default:
			close(crashed)
		}
		return errCrash
	}
	require.NoError(t, first.Start(ctx))
	<-crashed
	first.Stop()
	require.Len(t, s.nodes(t, "acme", "mail"), 1, "the node was made before the crash")
	require.Equal(t, 1, rows(t, pool, "intake"), "the row was not deleted")

	// The next consumer takes the row again; its key answers the node made.
	next := consume(t, pool, s.creator)
	waitCreated(t, next, id)
	require.Len(t, s.nodes(t, "acme", "mail"), 1, "never two")
	require.Zero(t, rows(t, pool, "intake"))
}

func TestConcurrentEnqueuesMakeExactlyOneNodeEach(t *testing.T) {
	t.Parallel()
	s, pool := startTether(t), database(t)
	// Two consumers, as two servers would run: SKIP LOCKED shares the rows.
	a, b := consume(t, pool, s.creator), consume(t, pool, s.creator)
	ctx := context.Background()
	const writers, txs, perTx = 8, 5, 25 // 1000 rows
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for x := range txs {
				tx, err := pool.Begin(ctx)
				if !assertNoError(t, err) {
					return
				}
				for r := range perTx {
					n := (w*txs+x)*perTx + r
					_, err := tx.Exec(ctx, "SELECT tether.enqueue($1, $2)", "acme", fmt.Sprintf(`{"type":"job","queue":"bulk","props":{"n":%d}}`, n))
					if !assertNoError(t, err) {
						_ = tx.Rollback(ctx)
						return
					}
				}
				assertNoError(t, tx.Commit(ctx))
			}
		})
	}
	wg.Wait()
	const total = writers * txs * perTx
	// Every node becomes claimable, each once.
	claimed := map[float64]bool{}
	for range total {
		n := s.claim(t, "acme", "bulk", 10*time.Second)
		require.NotNil(t, n, "after %d claims", len(claimed))
		v := n.Props["n"].(float64)
		require.False(t, claimed[v], "row %v made two nodes", v)
		claimed[v] = true
	}
	require.Nil(t, s.claim(t, "acme", "bulk", 0), "no node beyond one per row")
	// A batch stopped in its creates leaves its rows; a consumer after the
	// two takes them, and its key answers the nodes already made.
	a.Stop()
	b.Stop()
	rs, err := pool.Query(ctx, "SELECT id FROM tether.intake")
	require.NoError(t, err)
	left, err := pgx.CollectRows(rs, pgx.RowTo[int64])
	require.NoError(t, err)
	waitCreated(t, consume(t, pool, s.creator), left...)
	require.Len(t, s.nodes(t, "acme", "bulk"), total)
	require.Zero(t, rows(t, pool, "intake"))
	require.Zero(t, rows(t, pool, "intake_failed"))
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}
