package cli

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client/clienttest"
)

// run runs the CLI with args against the server at TETHER_URL.
func run(args ...string) (string, error) {
	root := NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// The CLI's calls get through a server that answers 503 twice, each create
// once; --retries 0 (or TETHER_RETRIES=0) gives the caller the first 503.
func TestCLIRetriesThroughTwo503s(t *testing.T) {
	srv := clienttest.New(t, &clienttest.Options{InMemory: true})
	proxy := clienttest.NewFaultProxy(t, srv.URL)
	t.Setenv("TETHER_URL", proxy.URL)
	t.Setenv("TETHER_TOKEN", srv.Token(srv.Tenant, "head", "dispatcher"))
	count := func() int {
		res, err := srv.Client.ListNodesWithResponse(context.Background(), nil)
		require.NoError(t, err)
		return len(res.JSON200.Items)
	}

	proxy.FailNext(2, http.StatusServiceUnavailable, clienttest.LoseAnswer, http.MethodPost, "/v1/nodes")
	out, err := run("nodes", "create", "--type", "task", "-o", "id")
	require.NoError(t, err, out)
	require.Len(t, proxy.Seen(), 3)
	require.Equal(t, 1, count(), "the create happened once")

	for _, off := range [][]string{{"--retries", "0"}, nil} {
		if off == nil {
			t.Setenv("TETHER_RETRIES", "0")
		}
		proxy.FailNext(2, http.StatusServiceUnavailable, clienttest.Refuse, http.MethodPost, "/v1/nodes")
		out, err = run(append([]string{"nodes", "create", "--type", "task"}, off...)...)
		require.Error(t, err)
		require.Contains(t, strings.ToLower(err.Error()+out), "unavailable", "the 503 reaches the caller")
		require.Len(t, proxy.Seen(), 1, "one try with retries off")
	}
	require.Equal(t, 1, count())

	_, err = run("nodes", "create", "--type", "task", "--retries", "-2")
	require.ErrorContains(t, err, "--retries (or TETHER_RETRIES) must be from 0 to 20")
	require.Equal(t, 2, exitCode(err))
}
