package intake

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/cluster"
	"github.com/tether-run/tether/internal/core"
	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/tenancy"
	"github.com/tether-run/tether/internal/testserver"
)

// clusterNode starts a server of a PostgreSQL cluster over pool on a free
// port; it leaves the cluster when the test ends.
func clusterNode(t *testing.T, pool *pgxpool.Pool) (*cluster.Node, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String()
	n, err := cluster.Open(context.Background(), cluster.Config{
		Postgres: pool, Schema: schema, Shards: 4, Advertise: url, LeaseTTL: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), DrainTimeout: 5 * time.Second,
		Server: server.Config{Config: core.Config{Tenant: tenancy.Config{JWTSecrets: []string{testserver.Secret}}}},
	})
	require.NoError(t, err)
	go func() { _ = n.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	return n, url
}

// TestRowsReachTheirShardsOwner: a consumer on one server of a cluster
// makes a node whose tenant's shard another server owns, through the
// front, which passes the create to the owner.
func TestRowsReachTheirShardsOwner(t *testing.T) {
	t.Parallel()
	pool := database(t)
	a, _ := clusterNode(t, pool)
	b, bURL := clusterNode(t, pool)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, a.WaitSettled(ctx))
	require.NoError(t, b.WaitSettled(ctx))
	elsewhere := ""
	for i := 0; elsewhere == ""; i++ {
		if tn := "t" + strconv.Itoa(i); a.ShardServer(tn) == nil && b.ShardServer(tn) != nil {
			elsewhere = tn
		}
	}
	c := consume(t, pool, &HandlerCreator{Handler: a.Handler(), Signer: &Signer{Secret: testserver.Secret}})
	id := enqueue(t, pool, elsewhere, `{"type":"email","queue":"mail"}`)
	waitCreated(t, c, id)

	owner := b.ShardServer(elsewhere)
	require.NotNil(t, owner)
	cl, err := client.NewClientWithResponses(bURL, client.WithBearerToken(tokenFor(t, elsewhere)))
	require.NoError(t, err)
	queue := "mail"
	res, err := cl.ListNodesWithResponse(ctx, &client.ListNodesParams{Queue: &queue})
	require.NoError(t, err)
	require.NotNil(t, res.JSON200, "%d %s", res.StatusCode(), res.Body)
	require.Len(t, res.JSON200.Items, 1, "the node is on the owner of its tenant's shard")
}

// tokenFor is a dispatcher's token of tenant, signed with the test secret.
func tokenFor(t *testing.T, tenant string) string {
	t.Helper()
	tok, err := testserver.SignToken(tenant, "tester", time.Now().Add(time.Hour), "dispatcher")
	require.NoError(t, err)
	return tok
}
