package runnertest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/client/clienttest"
	"github.com/tether-run/tether/runner"
	"github.com/tether-run/tether/runner/runnertest"
)

func TestRunCompletes(t *testing.T) {
	t.Parallel()
	srv := clienttest.New(t, &clienttest.Options{InMemory: true})
	out := runnertest.Run(t, srv, greet, client.NodeCreate{Props: &map[string]any{"name": "ada"}})
	require.Equal(t, client.NodeStatusDone, out.Status)
	require.JSONEq(t, `{"greeting":"hello ada"}`, string(out.Result))
	require.Empty(t, out.Error)
	require.EqualValues(t, 1, out.Node.Attempts)
}

func TestRunFails(t *testing.T) {
	t.Parallel()
	srv := clienttest.New(t, &clienttest.Options{InMemory: true})
	out := runnertest.Run(t, srv, greet, client.NodeCreate{})
	require.Equal(t, client.NodeStatusDead, out.Status, "one attempt, spent")
	require.Equal(t, "no name", out.Error)
	require.Nil(t, out.Result)
}

func TestRunPanics(t *testing.T) {
	t.Parallel()
	srv := clienttest.New(t, &clienttest.Options{InMemory: true})
	out := runnertest.Run(t, srv, runner.HandlerFunc(func(context.Context, *runner.Job) (any, error) {
		panic("boom")
	}), client.NodeCreate{})
	require.Equal(t, client.NodeStatusDead, out.Status)
	require.Contains(t, out.Error, "boom")
}

// Run's handler holds a real lease: it can call the server as the runner's
// identity with the lease's fence.
func TestRunHandlerSeesItsLease(t *testing.T) {
	t.Parallel()
	srv := clienttest.New(t, &clienttest.Options{InMemory: true})
	out := runnertest.Run(t, srv, runner.HandlerFunc(func(ctx context.Context, job *runner.Job) (any, error) {
		res, err := job.Client.GetNodeWithResponse(ctx, job.Lease.NodeID)
		if err != nil {
			return nil, err
		}
		if err := client.CheckResponse(res.HTTPResponse, res.Body); err != nil {
			return nil, err
		}
		return map[string]any{"holder": res.JSON200.Lease.By, "fence": res.JSON200.Lease.Fence}, nil
	}), client.NodeCreate{})
	require.Equal(t, client.NodeStatusDone, out.Status, out.Error)
	require.JSONEq(t, `{"holder":"runnertest","fence":1}`, string(out.Result))
}

func TestNewJob(t *testing.T) {
	t.Parallel()
	job := runnertest.NewJob(client.Node{ID: "n1", Type: "task"})
	require.Equal(t, client.NodeStatusRunning, job.Node.Status)
	require.Equal(t, job.Lease, *job.Node.Lease)
	require.Equal(t, runnertest.Worker, job.Lease.By)
	require.Contains(t, string(job.NodeJSON), `"id":"n1"`)
	_, err := greet.Work(t.Context(), job)
	require.EqualError(t, err, "no name")
}
