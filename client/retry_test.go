package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/client/clienttest"
)

// fastRetries is the default number of tries with waits short enough for a test.
var fastRetries = client.WithRetries(client.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond})

type retrySetup struct {
	srv   *clienttest.Server
	proxy *clienttest.FaultProxy
}

func setupRetry(t *testing.T) retrySetup {
	t.Helper()
	srv := clienttest.New(t, &clienttest.Options{InMemory: true})
	return retrySetup{srv: srv, proxy: clienttest.NewFaultProxy(t, srv.URL)}
}

// via is a client of the proxy acting as sub with roles.
func (s retrySetup) via(t *testing.T, sub string, roles []string, opts ...client.ClientOption) *client.ClientWithResponses {
	t.Helper()
	opts = append([]client.ClientOption{
		client.WithBearerToken(s.srv.Token(s.srv.Tenant, sub, roles...)),
		client.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}),
	}, opts...)
	c, err := client.NewClientWithResponses(s.proxy.URL, opts...)
	require.NoError(t, err)
	return c
}

func (s retrySetup) nodeCount(t *testing.T) int {
	t.Helper()
	res, err := s.srv.Client.ListNodesWithResponse(context.Background(), nil)
	require.NoError(t, err)
	require.NotNil(t, res.JSON200, string(res.Body))
	return len(res.JSON200.Items)
}

func TestRetryCreateThroughTwo503sCreatesOnce(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string]clienttest.FaultMode{"refused": clienttest.Refuse, "answer lost": clienttest.LoseAnswer} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := setupRetry(t)
			c := s.via(t, "head", []string{"dispatcher"}, fastRetries)
			s.proxy.FailNext(2, http.StatusServiceUnavailable, mode, http.MethodPost, "/v1/nodes")

			res, err := c.CreateNodeWithResponse(context.Background(), nil, client.NodeCreate{Type: "task", Queue: ptr("q")})
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))

			keys := s.proxy.Seen()
			require.Len(t, keys, 3, "two 503s, then the answer")
			require.NotEmpty(t, keys[0], "the client gives a create an Idempotency-Key")
			require.Equal(t, []string{keys[0], keys[0], keys[0]}, keys, "every try carries the same key")
			require.Equal(t, 1, s.nodeCount(t), "the create happened once")
		})
	}
}

func TestRetryClaimNextThroughTwoLostAnswersClaimsOnce(t *testing.T) {
	t.Parallel()
	s := setupRetry(t)
	ctx := context.Background()
	head := s.via(t, "head", []string{"dispatcher"}, fastRetries)
	worker := s.via(t, "w1", nil, fastRetries)
	for _, id := range []string{"n1", "n2", "n3"} {
		res, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("q")})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
	}

	// Both first tries claim and lose their answer; the third answers with
	// the claim the first made.
	s.proxy.FailNext(2, http.StatusServiceUnavailable, clienttest.LoseAnswer, http.MethodPost, "/v1/queues/q/claim")
	claim, err := worker.ClaimNextWithResponse(ctx, "q", client.ClaimNextRequest{})
	require.NoError(t, err)
	require.NotNil(t, claim.JSON200, string(claim.Body))
	keys := s.proxy.Seen()
	require.Len(t, keys, 3, "two lost answers, then the answer")
	require.NotEmpty(t, keys[0], "the client gives a claim-next an Idempotency-Key")
	require.Equal(t, []string{keys[0], keys[0], keys[0]}, keys, "every try carries the same key")

	running := 0
	for _, id := range []string{"n1", "n2", "n3"} {
		n, err := head.GetNodeWithResponse(ctx, id)
		require.NoError(t, err)
		require.NotNil(t, n.JSON200, string(n.Body))
		if n.JSON200.Status == client.NodeStatusRunning {
			running++
			require.Equal(t, claim.JSON200.Node.ID, id, "the node running is the one answered")
			require.Equal(t, int64(1), n.JSON200.Attempts, "claimed once")
			require.Equal(t, claim.JSON200.Lease.Fence, n.JSON200.Lease.Fence)
		}
	}
	require.Equal(t, 1, running, "the claim-next claimed exactly one node")

	// claim-many: the same through lost answers.
	s.proxy.FailNext(2, http.StatusServiceUnavailable, clienttest.LoseAnswer, http.MethodPost, "/v1/queues/q/claims")
	many, err := worker.ClaimNextManyWithResponse(ctx, "q", client.ClaimManyRequest{Max: ptr(1)})
	require.NoError(t, err)
	require.NotNil(t, many.JSON200, string(many.Body))
	require.Len(t, many.JSON200.Items, 1)
	require.NotEqual(t, claim.JSON200.Node.ID, many.JSON200.Items[0].Node.ID)
	left, err := head.ListNodesWithResponse(ctx, &client.ListNodesParams{Status: ptr(client.NodeStatusQueued)})
	require.NoError(t, err)
	require.NotNil(t, left.JSON200, string(left.Body))
	require.Len(t, left.JSON200.Items, 1, "one node left of three: each call claimed one")
}

// A key the caller gives a claim is the one every try carries.
func TestRetryClaimNextKeepsTheCallersKey(t *testing.T) {
	t.Parallel()
	s := setupRetry(t)
	ctx := context.Background()
	head := s.via(t, "head", []string{"dispatcher"}, fastRetries)
	worker := s.via(t, "w1", nil, fastRetries)
	_, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("n1"), Type: "task", Queue: ptr("q")})
	require.NoError(t, err)
	s.proxy.FailNext(1, http.StatusServiceUnavailable, clienttest.LoseAnswer, http.MethodPost, "/v1/queues/q/claim")
	mine := func(_ context.Context, req *http.Request) error {
		req.Header.Set("Idempotency-Key", "my-claim-1")
		return nil
	}
	claim, err := worker.ClaimNextWithResponse(ctx, "q", client.ClaimNextRequest{}, mine)
	require.NoError(t, err)
	require.NotNil(t, claim.JSON200, string(claim.Body))
	require.Equal(t, []string{"my-claim-1", "my-claim-1"}, s.proxy.Seen())
}

func TestRetryOffPasses503ToTheCaller(t *testing.T) {
	t.Parallel()
	s := setupRetry(t)
	c := s.via(t, "head", []string{"dispatcher"}, client.WithoutRetries())
	s.proxy.FailNext(2, http.StatusServiceUnavailable, clienttest.LoseAnswer, http.MethodPost, "/v1/nodes")

	res, err := c.CreateNodeWithResponse(context.Background(), nil, client.NodeCreate{Type: "task"})
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode())
	require.True(t, client.IsCode(client.CheckResponse(res.HTTPResponse, res.Body), client.ProblemCodeUnavailable))
	require.Equal(t, []string{""}, s.proxy.Seen(), "one try, with no key of the client's making")
}

func TestRetryClaimAndRenewThrough503s(t *testing.T) {
	t.Parallel()
	s := setupRetry(t)
	ctx := context.Background()
	head := s.via(t, "head", []string{"dispatcher"}, fastRetries)
	worker := s.via(t, "w1", nil, fastRetries)
	created, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("n1"), Type: "task", Queue: ptr("q")})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, created.StatusCode(), string(created.Body))

	// The first claim is applied but its answer lost; the retry re-claims
	// the caller's own lease, which renews it.
	s.proxy.FailNext(2, http.StatusServiceUnavailable, clienttest.LoseAnswer, http.MethodPost, "/v1/nodes/n1/claim")
	claim, err := worker.ClaimNodeWithResponse(ctx, "n1", client.ClaimRequest{})
	require.NoError(t, err)
	require.NotNil(t, claim.JSON200, string(claim.Body))
	require.True(t, claim.JSON200.Renewed, "the retry found the claim its first try made")
	require.Len(t, s.proxy.Seen(), 3)

	s.proxy.FailNext(2, http.StatusServiceUnavailable, clienttest.LoseAnswer, http.MethodPost, "/v1/nodes/n1/renew")
	fence := claim.JSON200.Lease.Fence
	renew, err := worker.RenewLeaseWithResponse(ctx, "n1", client.RenewRequest{Fence: &fence})
	require.NoError(t, err)
	require.NotNil(t, renew.JSON200, string(renew.Body))
	require.Equal(t, fence, renew.JSON200.Lease.Fence)

	node, err := head.GetNodeWithResponse(ctx, "n1")
	require.NoError(t, err)
	require.NotNil(t, node.JSON200)
	require.EqualValues(t, 1, node.JSON200.Attempts, "one claim counted")
}

func TestRetryDoesNotRepeatAnUnkeyedWriteOn503(t *testing.T) {
	t.Parallel()
	s := setupRetry(t)
	ctx := context.Background()
	head := s.via(t, "head", []string{"dispatcher"}, fastRetries)
	worker := s.via(t, "w1", nil, fastRetries)
	_, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("n1"), Type: "task", Queue: ptr("q")})
	require.NoError(t, err)
	claim, err := worker.ClaimNodeWithResponse(ctx, "n1", client.ClaimRequest{})
	require.NoError(t, err)
	require.NotNil(t, claim.JSON200, string(claim.Body))
	fence := claim.JSON200.Lease.Fence

	// A 503 may come after the server acted: a complete is not sent again.
	s.proxy.FailNext(2, http.StatusServiceUnavailable, clienttest.LoseAnswer, http.MethodPost, "/v1/nodes/n1/complete")
	res, err := worker.CompleteNodeWithResponse(ctx, "n1", client.CompleteRequest{Fence: &fence})
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode())
	require.Len(t, s.proxy.Seen(), 1, "a complete is tried once on a 503")
	node, err := head.GetNodeWithResponse(ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, client.NodeStatusDone, node.JSON200.Status, "the one try was applied")
}

func TestRetryRepeatsAnyWriteOn429(t *testing.T) {
	t.Parallel()
	s := setupRetry(t)
	ctx := context.Background()
	head := s.via(t, "head", []string{"dispatcher"}, fastRetries)
	worker := s.via(t, "w1", nil, fastRetries)
	_, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("n1"), Type: "task", Queue: ptr("q")})
	require.NoError(t, err)
	claim, err := worker.ClaimNodeWithResponse(ctx, "n1", client.ClaimRequest{})
	require.NoError(t, err)
	fence := claim.JSON200.Lease.Fence

	// A 429 is a refusal before acting: safe to send again, whatever the call.
	s.proxy.FailNext(2, http.StatusTooManyRequests, clienttest.Refuse, http.MethodPost, "/v1/nodes/n1/complete")
	res, err := worker.CompleteNodeWithResponse(ctx, "n1", client.CompleteRequest{Fence: &fence})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.Len(t, s.proxy.Seen(), 3)
}

func TestRetryDialsAgainWhenNoConnectionWasMade(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now

	var dials atomic.Int32
	dialer := &net.Dialer{}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		dials.Add(1)
		return dialer.DialContext(ctx, network, a)
	}}}
	for name, tc := range map[string]struct {
		opts  []client.ClientOption
		dials int32
	}{
		"on":  {[]client.ClientOption{fastRetries}, client.DefaultRetryMaxAttempts},
		"off": {[]client.ClientOption{client.WithoutRetries()}, 1},
	} {
		dials.Store(0)
		c, err := client.NewClientWithResponses("http://"+addr, append([]client.ClientOption{client.WithHTTPClient(hc)}, tc.opts...)...)
		require.NoError(t, err)
		// A complete is not repeatable, but a refused connection never reached a server.
		fence := int64(1)
		_, err = c.CompleteNodeWithResponse(context.Background(), "n1", client.CompleteRequest{Fence: &fence})
		var op *net.OpError
		require.True(t, errors.As(err, &op), "%s: %v", name, err)
		require.Equal(t, tc.dials, dials.Load(), name)
	}
}

func TestRetryGivesUpWhenTheContextCannotWait(t *testing.T) {
	t.Parallel()
	s := setupRetry(t)
	c := s.via(t, "head", []string{"dispatcher"}, client.WithRetries(client.RetryPolicy{BaseDelay: time.Hour, MaxDelay: time.Hour}))
	s.proxy.FailNext(2, http.StatusServiceUnavailable, clienttest.Refuse, http.MethodGet, "/v1/nodes")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ListNodesWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode(), "a wait past the deadline is not begun: the caller gets the 503")
	require.Len(t, s.proxy.Seen(), 1)
}

func ptr[T any](v T) *T { return &v }
