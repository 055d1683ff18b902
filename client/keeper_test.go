package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/client/clienttest"
	"github.com/tether-run/tether/internal/clock"
	"github.com/tether-run/tether/internal/clock/clocktest"
)

// keepEnv is a real server on a free port (client/clienttest); clk is its
// clock, or nil for the wall clock.
type keepEnv struct {
	t   *testing.T
	srv *clienttest.Server
	clk *clocktest.Fake
}

// startKeepServer starts an in-memory server whose leases expire on clk
// (the wall clock when nil).
func startKeepServer(t *testing.T, clk *clocktest.Fake) *keepEnv {
	t.Helper()
	s := clienttest.New(t, &clienttest.Options{
		InMemory: true, Clock: clk, WallClock: clk == nil,
		ReaperInterval: 100 * time.Millisecond, ClaimTTLDefault: 30 * time.Second,
	})
	return &keepEnv{t: t, srv: s, clk: clk}
}

// as is a client for sub in tenant acme; doer wraps the transport when set.
func (e *keepEnv) as(sub, role string, wrap func(client.HttpRequestDoer) client.HttpRequestDoer) *client.ClientWithResponses {
	e.t.Helper()
	tok := e.srv.Token("acme", sub, role)
	var doer client.HttpRequestDoer = &http.Client{Timeout: 10 * time.Second}
	if wrap != nil {
		doer = wrap(doer)
	}
	// The keeper's own retries are under test here, not the client's.
	c, err := client.NewClientWithResponses(e.srv.URL, client.WithHTTPClient(doer), client.WithBearerToken(tok), client.WithoutRetries())
	require.NoError(e.t, err)
	return c
}

// claimed creates node id in queue default and claims it as c for ttl.
func (e *keepEnv) claimed(c *client.ClientWithResponses, id string, ttl time.Duration) client.Lease {
	e.t.Helper()
	ctx := context.Background()
	queue := "default"
	cr, err := e.as("head", "dispatcher", nil).CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: &id, Type: "task", Queue: &queue})
	require.NoError(e.t, err)
	require.NoError(e.t, client.CheckResponse(cr.HTTPResponse, cr.Body))
	ms := ttl.Milliseconds()
	res, err := c.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{TTLMS: &ms})
	require.NoError(e.t, err)
	require.NoError(e.t, client.CheckResponse(res.HTTPResponse, res.Body))
	return res.JSON200.Lease
}

// leaseOf is the node's live lease, or nil.
func (e *keepEnv) leaseOf(id string) *client.Lease {
	e.t.Helper()
	res, err := e.as("head", "dispatcher", nil).GetNodeWithResponse(context.Background(), id)
	require.NoError(e.t, err)
	require.NoError(e.t, client.CheckResponse(res.HTTPResponse, res.Body))
	return res.JSON200.Lease
}

// keepSignals turn a keeper's waits and renewals into channels, so a test
// moves the fake clock exactly when the keeper waits on it.
type keepSignals struct {
	waits   chan time.Duration
	renewed chan client.RenewResponse
}

func withSignals(clk clock.Clock) (*keepSignals, client.KeepOption) {
	s := &keepSignals{waits: make(chan time.Duration, 16), renewed: make(chan client.RenewResponse, 16)}
	return s, client.KeepHooks(clk, func(d time.Duration) { s.waits <- d }, func(r client.RenewResponse) { s.renewed <- r })
}

func (s *keepSignals) nextWait(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-s.waits:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("the keeper did not wait again")
		return 0
	}
}

func (s *keepSignals) nextRenewal(t *testing.T) client.RenewResponse {
	t.Helper()
	select {
	case r := <-s.renewed:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the keeper did not renew")
		return client.RenewResponse{}
	}
}

func requireDone(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the kept context did not end")
	}
}

func TestKeepRenewsAtAThirdOfTheTTL(t *testing.T) {
	t.Parallel()
	e := startKeepServer(t, clocktest.New(time.Now().UTC().Truncate(time.Millisecond)))
	alice := e.as("alice", "worker", nil)
	lease := e.claimed(alice, "t1", 30*time.Second)
	sig, hooks := withSignals(e.clk)

	ctx, stop := client.Keep(t.Context(), alice, "t1", lease, hooks)
	// Four renewals carry the lease well past its first expiry.
	for range 4 {
		require.Equal(t, 10*time.Second, sig.nextWait(t))
		e.clk.Advance(10 * time.Second)
		r := sig.nextRenewal(t)
		require.Equal(t, lease.Fence, r.Lease.Fence)
		require.True(t, r.Lease.ExpiresAt.Equal(e.clk.Now().Add(30*time.Second)), "renewed for the TTL from now")
	}
	require.Equal(t, 10*time.Second, sig.nextWait(t))
	require.True(t, e.clk.Now().After(lease.ExpiresAt))
	live := e.leaseOf("t1")
	require.NotNil(t, live)
	require.Equal(t, lease.Fence, live.Fence)
	require.NoError(t, ctx.Err())

	require.NoError(t, stop())
	require.ErrorIs(t, ctx.Err(), context.Canceled)
	require.NoError(t, stop(), "stop is idempotent")
}

func TestKeepRenewsAnOldLeaseAtOnce(t *testing.T) {
	t.Parallel()
	e := startKeepServer(t, clocktest.New(time.Now().UTC().Truncate(time.Millisecond)))
	alice := e.as("alice", "worker", nil)
	lease := e.claimed(alice, "t1", 30*time.Second)
	e.clk.Advance(25 * time.Second) // 5 s left: past the point a renewal was due
	sig, hooks := withSignals(e.clk)

	_, stop := client.Keep(t.Context(), alice, "t1", lease, hooks)
	require.Zero(t, sig.nextWait(t))
	sig.nextRenewal(t)
	require.Equal(t, 10*time.Second, sig.nextWait(t))
	require.NoError(t, stop())
}

func TestKeepEndsWhenTheLeaseIsTaken(t *testing.T) {
	t.Parallel()
	e := startKeepServer(t, clocktest.New(time.Now().UTC().Truncate(time.Millisecond)))
	alice := e.as("alice", "worker", nil)
	lease := e.claimed(alice, "t1", 30*time.Second)
	sig, hooks := withSignals(e.clk)
	ctx, stop := client.Keep(t.Context(), alice, "t1", lease, hooks)
	sig.nextWait(t)

	// A dispatcher takes the node from alice and bob claims it.
	head, bob := e.as("head", "dispatcher", nil), e.as("bob", "worker", nil)
	rr, err := head.ReleaseNodeWithResponse(t.Context(), "t1", client.ReleaseRequest{})
	require.NoError(t, err)
	require.NoError(t, client.CheckResponse(rr.HTTPResponse, rr.Body))
	cr, err := bob.ClaimNodeWithResponse(t.Context(), "t1", client.ClaimRequest{})
	require.NoError(t, err)
	require.NoError(t, client.CheckResponse(cr.HTTPResponse, cr.Body))

	e.clk.Advance(10 * time.Second)
	requireDone(t, ctx)
	cause := context.Cause(ctx)
	require.ErrorIs(t, cause, client.ErrLeaseLost)
	require.True(t, client.IsCode(cause, client.ProblemCodeLeaseLost), "%v", cause)
	var p *client.Problem
	require.ErrorAs(t, cause, &p)
	require.Equal(t, "bob", *p.Holder)
	require.Equal(t, cause, stop())
}

// flaky fails the renewals it is told to, with a network error or a 503, and
// passes every other request on.
type flaky struct {
	next      client.HttpRequestDoer
	failures  atomic.Int32 // renewals still to fail
	attempted atomic.Int32
}

func (f *flaky) Do(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/renew") {
		return f.next.Do(req)
	}
	n := f.attempted.Add(1)
	if f.failures.Load() <= 0 {
		return f.next.Do(req)
	}
	f.failures.Add(-1)
	if n%2 == 1 {
		return nil, errors.New("connection reset by peer")
	}
	body := `{"type":"urn:tether:problem:unavailable","title":"Service Unavailable","status":503,"code":"unavailable"}`
	return &http.Response{
		StatusCode: http.StatusServiceUnavailable,
		Header:     http.Header{"Content-Type": {"application/problem+json"}},
		Body:       io.NopCloser(bytes.NewBufferString(body)),
		Request:    req,
	}, nil
}

func TestKeepRetriesTransientErrors(t *testing.T) {
	t.Parallel()
	e := startKeepServer(t, clocktest.New(time.Now().UTC().Truncate(time.Millisecond)))
	f := &flaky{}
	alice := e.as("alice", "worker", func(d client.HttpRequestDoer) client.HttpRequestDoer { f.next = d; return f })
	lease := e.claimed(alice, "t1", 30*time.Second)
	f.failures.Store(3)
	sig, hooks := withSignals(e.clk)

	ctx, stop := client.Keep(t.Context(), alice, "t1", lease, hooks, client.KeepBackoff(time.Second, 4*time.Second))
	e.clk.Advance(sig.nextWait(t))
	var waited time.Duration
	for i, base := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		d := sig.nextWait(t)
		require.True(t, d >= base/2 && d < base, "retry %d waits %v, want [%v, %v)", i, d, base/2, base)
		waited += d
		e.clk.Advance(d)
	}
	sig.nextRenewal(t)
	require.Equal(t, int32(4), f.attempted.Load())
	require.Equal(t, 10*time.Second, sig.nextWait(t))
	require.NoError(t, ctx.Err())
	require.NoError(t, stop(), "the last renewal succeeded")
	t.Logf("retried for %v of fake time", waited)
}

func TestKeepGivesUpAtTheExpiry(t *testing.T) {
	t.Parallel()
	e := startKeepServer(t, clocktest.New(time.Now().UTC().Truncate(time.Millisecond)))
	f := &flaky{}
	alice := e.as("alice", "worker", func(d client.HttpRequestDoer) client.HttpRequestDoer { f.next = d; return f })
	lease := e.claimed(alice, "t1", 30*time.Second)
	f.failures.Store(1 << 20)
	sig, hooks := withSignals(e.clk)

	ctx, stop := client.Keep(t.Context(), alice, "t1", lease, hooks, client.KeepBackoff(time.Second, 8*time.Second))
	expiry := e.clk.Now().Add(30 * time.Second)
	for ctx.Err() == nil && e.clk.Now().Before(expiry) {
		select {
		case d := <-sig.waits:
			require.False(t, e.clk.Now().Add(d).After(expiry), "a retry is never planned past the expiry")
			e.clk.Advance(d)
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the keeper neither waited nor ended")
		}
	}
	requireDone(t, ctx)
	cause := context.Cause(ctx)
	require.ErrorIs(t, cause, client.ErrLeaseLost)
	require.ErrorContains(t, cause, "without a successful renewal")
	var p *client.Problem
	if errors.As(cause, &p) {
		require.Equal(t, http.StatusServiceUnavailable, p.Status)
	} else {
		require.ErrorContains(t, cause, "connection reset")
	}
	require.Equal(t, expiry, e.clk.Now(), "it gave up exactly at the expiry")
	require.Equal(t, cause, stop())
}

func TestKeepStopsWithItsParent(t *testing.T) {
	t.Parallel()
	e := startKeepServer(t, clocktest.New(time.Now().UTC().Truncate(time.Millisecond)))
	alice := e.as("alice", "worker", nil)
	lease := e.claimed(alice, "t1", 30*time.Second)
	sig, hooks := withSignals(e.clk)
	parent, cancel := context.WithCancel(t.Context())

	ctx, stop := client.Keep(parent, alice, "t1", lease, hooks)
	sig.nextWait(t)
	cancel()
	requireDone(t, ctx)
	require.ErrorIs(t, context.Cause(ctx), context.Canceled)
	require.NoError(t, stop(), "the lease was not lost")
}

// TestKeepRealTimer holds a one-second lease for well over a second on the
// wall clock, then stops, after which the lease lapses on its own.
func TestKeepRealTimer(t *testing.T) {
	t.Parallel()
	e := startKeepServer(t, nil)
	alice := e.as("alice", "worker", nil)
	lease := e.claimed(alice, "t1", time.Second)
	renewed := make(chan client.RenewResponse, 16)

	ctx, stop := client.Keep(t.Context(), alice, "t1", lease, client.KeepOnRenew(func(r client.RenewResponse) { renewed <- r }))
	start := time.Now()
	for range 5 { // ~1.7 s: past the first expiry
		select {
		case r := <-renewed:
			require.Equal(t, lease.Fence, r.Lease.Fence)
		case <-ctx.Done():
			t.Fatalf("lost the lease: %v", context.Cause(ctx))
		case <-time.After(5 * time.Second):
			t.Fatal("no renewal")
		}
	}
	require.Greater(t, time.Since(start), time.Second)
	live := e.leaseOf("t1")
	require.NotNil(t, live)
	require.Equal(t, lease.Fence, live.Fence)
	require.NoError(t, stop())

	// Nothing renews it any more: it is gone within its TTL (and the reaper's interval).
	require.Eventually(t, func() bool { return e.leaseOf("t1") == nil }, 3*time.Second, 50*time.Millisecond)
	require.Empty(t, renewed)
}
