package intake

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/pgschema"
	"github.com/tether-run/tether/internal/pgtest"
	"github.com/tether-run/tether/internal/testserver"
)

// tether is a real Tether server (Badger in a temporary directory) and the
// intake's creator over its API handler.
type tether struct {
	srv     *testserver.Server
	creator *HandlerCreator
}

func startTether(t testing.TB, opts ...testserver.Option) *tether {
	t.Helper()
	srv := testserver.Start(t, opts...)
	signer := &Signer{Secret: testserver.Secret}
	if srv.Clock != nil { // not a typed nil in the interface
		signer.Clock = srv.Clock
	}
	return &tether{srv: srv, creator: &HandlerCreator{Handler: srv.API.Handler(), Signer: signer}}
}

// client is a generated client of tenant, as a dispatcher.
func (s *tether) client(t testing.TB, tenant string) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(s.srv.URL, client.WithBearerToken(s.srv.Token(tenant, "tester", "dispatcher")))
	require.NoError(t, err)
	return c
}

// nodes lists tenant's nodes of queue (at most 1000).
func (s *tether) nodes(t testing.TB, tenant, queue string) []client.Node {
	t.Helper()
	var out []client.Node
	var cursor *string
	for {
		limit := 1000
		res, err := s.client(t, tenant).ListNodesWithResponse(context.Background(), &client.ListNodesParams{Queue: &queue, Limit: &limit, Cursor: cursor})
		require.NoError(t, err)
		require.NotNil(t, res.JSON200, "%d %s", res.StatusCode(), res.Body)
		out = append(out, res.JSON200.Items...)
		if res.JSON200.NextCursor == nil || *res.JSON200.NextCursor == "" {
			return out
		}
		cursor = res.JSON200.NextCursor
	}
}

// schema is the schema every test's intake tables are in.
const schema = "tether"

// database is a fresh PostgreSQL database migrated to this binary's schema.
func database(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.URL(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pgschema.Migrate(context.Background(), pool, schema)
	require.NoError(t, err)
	return pool
}

// consume starts a consumer of pool's intake over creator, with its
// signals on, stopped when the test ends; change alters its Config.
func consume(t testing.TB, pool *pgxpool.Pool, creator Creator, change ...func(*Config)) *Consumer {
	t.Helper()
	cfg := Config{Pool: pool, Schema: schema, Creator: creator, PollInterval: 50 * time.Millisecond}
	for _, f := range change {
		f(&cfg)
	}
	c, err := New(cfg)
	require.NoError(t, err)
	c.TestSignals.Committed.Init(t)
	c.TestSignals.Listening.Init(t)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(c.Stop)
	return c
}

// enqueue commits one row in a transaction of its own and returns its id.
func enqueue(t testing.TB, pool *pgxpool.Pool, tenant, node string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT tether.enqueue($1, $2)", tenant, node).Scan(&id))
	return id
}

// waitCreated waits until the consumer has committed the rows ids as made.
func waitCreated(t testing.TB, c *Consumer, ids ...int64) {
	t.Helper()
	left := map[int64]bool{}
	for _, id := range ids {
		left[id] = true
	}
	for len(left) > 0 {
		out := c.TestSignals.Committed.Wait(t)
		for _, id := range out.Created {
			delete(left, id)
		}
	}
}

// rows counts the rows of table (intake or intake_failed).
func rows(t testing.TB, pool *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM tether."+table).Scan(&n))
	return n
}

// claim long-polls claim-next on queue as tenant's worker for up to wait
// and returns the node claimed (nil when none came).
func (s *tether) claim(t testing.TB, tenant, queue string, wait time.Duration) *client.Node {
	t.Helper()
	ms := wait.Milliseconds()
	res, err := s.client(t, tenant).ClaimNextWithResponse(context.Background(), queue, client.ClaimNextJSONRequestBody{WaitMS: &ms})
	require.NoError(t, err)
	if res.StatusCode() == http.StatusNoContent {
		return nil
	}
	require.NotNil(t, res.JSON200, "%d %s", res.StatusCode(), res.Body)
	return &res.JSON200.Node
}
