package server_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/apitest"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/message"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
	"github.com/tether-run/tether/internal/schedule"
	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/testserver"
)

// as is a generated client for sub of tenant acme on s, validating every
// response against openapi.yaml.
func as(t *testing.T, s *testserver.Server, sub string) *client.ClientWithResponses {
	t.Helper()
	hc := &http.Client{Transport: apitest.ValidatingTransport(t, nil), Timeout: 30 * time.Second}
	c, err := client.NewClientWithResponses(s.URL, client.WithHTTPClient(hc), client.WithBearerToken(s.Token("acme", sub)), client.WithoutRetries())
	require.NoError(t, err)
	return c
}

// A server opened again on the data dir of one that shut down serves what
// the first one stored: nodes with their live leases (given a full TTL
// afresh), messages and schedules.
func TestServerServesItsRecordsAfterARestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := testserver.Config(t)
	s := testserver.Serve(t, cfg)
	head := nodes.Caller{Tenant: "acme", Sub: "head", Dispatcher: true}
	id, q := "job-1", "q"
	_, err := s.Nodes.Create(ctx, head, nodes.NodeSpec{ID: &id, Type: "task", Queue: &q}, nil)
	require.NoError(t, err)
	claimed, err := s.Leases.Claim(ctx, leasing.ClaimParams{Tenant: "acme", NodeID: id, By: "alice"})
	require.NoError(t, err)
	_, err = s.Messages.Send(ctx, message.SendParams{Tenant: "acme", From: "head", To: "alice", Body: "hello after restart"})
	require.NoError(t, err)
	sid, cron := "nightly", "0 3 * * *"
	_, err = s.Schedules.Create(ctx, "acme", "head", schedule.Settings{ID: &sid, Cron: &cron, Template: &nodes.NodeSpec{Type: "task", Queue: &q}})
	require.NoError(t, err)
	s.Stop()

	s = testserver.Serve(t, cfg)
	t.Cleanup(s.Stop)
	alice := as(t, s, "alice")
	node, err := alice.GetNodeWithResponse(ctx, id)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, node.StatusCode(), string(node.Body))
	require.Equal(t, client.NodeStatus(records.StatusRunning), node.JSON200.Status)
	require.Equal(t, "alice", node.JSON200.Lease.By)
	require.EqualValues(t, claimed.Lease.Fence, node.JSON200.Lease.Fence)
	require.False(t, node.JSON200.Lease.ExpiresAt.Before(claimed.Lease.ExpiresAt), "a restart never shortens a lease")

	inbox, err := alice.ListInboxWithResponse(ctx, &client.ListInboxParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, inbox.StatusCode(), string(inbox.Body))
	require.Len(t, inbox.JSON200.Items, 1)
	require.Equal(t, "hello after restart", inbox.JSON200.Items[0].Body)

	sched, err := as(t, s, "head").GetScheduleWithResponse(ctx, sid)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, sched.StatusCode(), string(sched.Body))
}

// Shutdown answers a long poll in flight instead of cutting it, then
// closes the store and releases the data dir: another store opens it.
func TestShutdownDrainsAndClosesTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testserver.Open(t)
	alice := as(t, s, "alice")
	type answer struct {
		status int
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		wait := int64(60_000)
		res, err := alice.ClaimNextWithResponse(ctx, "q", client.ClaimNextRequest{WaitMS: &wait})
		a := answer{err: err}
		if err == nil {
			a.status = res.StatusCode()
		}
		answered <- a
	}()
	waitForClaimer(t, s.Store, "acme", "q")

	require.NoError(t, s.Shutdown(ctx))
	select {
	case a := <-answered:
		require.NoError(t, a.err)
		require.Less(t, a.status, 300, "the poll was answered, not cut")
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll outlived Shutdown")
	}
	require.Error(t, s.Store.Update(ctx, func(*graphstore.Tx) error { return nil }), "the store is closed")

	again, err := graphstore.Open(graphstore.Options{Dir: s.DataDir})
	require.NoError(t, err, "the data dir is released")
	require.NoError(t, again.Close())
}

// waitForClaimer returns once a claim-next long poll waits on queue q.
func waitForClaimer(t *testing.T, store *graphstore.Store, tenant, q string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if waiting, _ := store.ReadyWaiters(tenant, q); waiting > 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "no long poll waits")
		runtime.Gosched()
	}
}

// An Open that fails after the store opened (here: the blob directory is a
// file) leaves no service of the server running and releases the data dir.
// Not parallel: it looks at every goroutine of the process.
func TestFailedOpenLeavesNothingRunning(t *testing.T) {
	cfg := testserver.Config(t)
	notADir := filepath.Join(t.TempDir(), "blobs")
	require.NoError(t, os.WriteFile(notADir, []byte("x"), 0o600))
	cfg.BlobDir = notADir

	srv, err := server.Open(context.Background(), cfg)
	require.Error(t, err)
	require.Nil(t, srv)

	store, err := graphstore.Open(graphstore.Options{Dir: cfg.DataDir})
	require.NoError(t, err, "the data dir is released")
	require.NoError(t, store.Close())
	// graphstore.Store.Close signals its list-sync goroutine and does not wait
	// for it, so one may still be on its way out: allow it a moment.
	deadline := time.Now().Add(5 * time.Second)
	for len(tetherGoroutines()) > 0 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	require.Empty(t, tetherGoroutines(), "goroutines of the failed server still run")
}

// tetherGoroutines are the stacks of running goroutines that are in a
// Tether package other than this test's.
func tetherGoroutines() []string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	var out []string
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "github.com/tether-run/tether/") && !strings.Contains(g, "server_test.") && !strings.Contains(g, "testing.") {
			out = append(out, g)
		}
	}
	return out
}
