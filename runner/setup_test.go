package runner

// The runner's tests run it against a real server (client/clienttest: a
// real store, a fake clock that decides lease expiry and retry delays) and
// watch the nodes through the generated client. Handlers block on channels
// the tests close, never on sleeps.

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/client/clienttest"
)

// waitFor is the most a test waits for the runner to get somewhere.
const waitFor = 10 * time.Second

// bundle is one test's server and its clients.
type bundle struct {
	t     *testing.T
	srv   *clienttest.Server
	head  *client.ClientWithResponses // a dispatcher, who creates the nodes
	token string                      // the runner's worker identity
}

func setup(t *testing.T) *bundle {
	t.Helper()
	srv := clienttest.New(t, &clienttest.Options{InMemory: true, ReaperInterval: 20 * time.Millisecond})
	head := srv.ClientFor("acme", "head", "dispatcher")
	return &bundle{t: t, srv: srv, head: head, token: srv.Token("acme", "runner", "worker")}
}

// config is a runner's configuration for queue q with handler h: one slot
// named "t", renewals every 20 ms, quick retries, a discarded log.
func (b *bundle) config(q string, h Handler) Config {
	return Config{
		Server: b.srv.URL, Token: b.token, Queue: q, Handler: h,
		WorkerName: "t", RenewEvery: 20 * time.Millisecond,
		Backoff: Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// start runs a runner of cfg until the test ends; stop cancels its context,
// done yields what Run returned.
func (b *bundle) start(cfg Config) (r *Runner, stop context.CancelFunc, done <-chan error) {
	b.t.Helper()
	r, err := New(cfg)
	require.NoError(b.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		errc <- r.Run(ctx)
	}()
	b.t.Cleanup(func() {
		r.Kill()
		select {
		case <-finished:
		case <-time.After(waitFor):
			b.t.Error("the runner did not return after Kill")
		}
	})
	return r, cancel, errc
}

// create makes node id in queue q.
func (b *bundle) create(n client.NodeCreate) {
	b.t.Helper()
	n.Type = "task"
	res, err := b.head.CreateNodeWithResponse(context.Background(), nil, n)
	require.NoError(b.t, err)
	require.Equal(b.t, http.StatusCreated, res.StatusCode(), string(res.Body))
}

func (b *bundle) node(id string) client.Node {
	b.t.Helper()
	res, err := b.head.GetNodeWithResponse(context.Background(), id)
	require.NoError(b.t, err)
	require.Equal(b.t, http.StatusOK, res.StatusCode(), string(res.Body))
	return *res.JSON200
}

// waitNode waits until node id satisfies ok and returns it.
func (b *bundle) waitNode(id, what string, ok func(client.Node) bool) client.Node {
	b.t.Helper()
	var n client.Node
	require.Eventually(b.t, func() bool { n = b.node(id); return ok(n) }, waitFor, 10*time.Millisecond, "node %s: %s", id, what)
	return n
}

// waitStatus waits until node id has status st.
func (b *bundle) waitStatus(id string, st client.NodeStatus) client.Node {
	b.t.Helper()
	return b.waitNode(id, "status "+string(st), func(n client.Node) bool { return n.Status == st })
}

// outcomes are the outcomes of node id's retired assigned edges, by holder.
func (b *bundle) outcomes(id string) map[string]string {
	b.t.Helper()
	res, err := b.head.ListNodeEdgesWithResponse(context.Background(), id, &client.ListNodeEdgesParams{
		Type: ptrTo("assigned"), IncludeRetired: ptrTo(true),
	})
	require.NoError(b.t, err)
	require.Equal(b.t, http.StatusOK, res.StatusCode(), string(res.Body))
	out := map[string]string{}
	for _, ed := range res.JSON200.Items {
		outcome, _ := ed.Props["outcome"].(string)
		out[strings.TrimPrefix(ed.To, "identity:")] = outcome
	}
	return out
}

// worker is the registry's record of slot name of the runner's identity.
func (b *bundle) worker(name string) (client.Worker, bool) {
	b.t.Helper()
	res, err := b.head.ListWorkersWithResponse(context.Background(), nil)
	require.NoError(b.t, err)
	require.Equal(b.t, http.StatusOK, res.StatusCode(), string(res.Body))
	for _, w := range res.JSON200.Items {
		if w.By == "runner" && w.Worker == name {
			return w, true
		}
	}
	return client.Worker{}, false
}

// returned waits for what Run returned.
func returned(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitFor):
		t.Fatal("Run did not return")
		return nil
	}
}
