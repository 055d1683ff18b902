package runner

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// A Go function completes each node with its result; a completion hands the
// slot the next ready node; the slot shows in the worker registry, offline
// once Run has returned after its context ended.
func TestGoHandlerCompletesNodes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	jobs := make(chan *Job, 10)
	gate := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, job *Job) (any, error) {
		jobs <- job
		<-gate
		return map[string]any{"node": job.Node.ID, "fence": job.Lease.Fence}, nil
	})
	_, stop, done := b.start(b.config("go", h))

	b.create(client.NodeCreate{ID: ptrTo("go-1"), Queue: ptrTo("go"), Props: &map[string]any{"x": 1}})
	job := <-jobs
	require.Equal(t, "go-1", job.Node.ID)
	require.Equal(t, client.NodeStatusRunning, job.Node.Status)
	require.Equal(t, float64(1), job.Node.Props["x"])
	require.Contains(t, string(job.NodeJSON), `"id":"go-1"`)
	require.Equal(t, "t-1", job.Worker)
	require.Empty(t, job.InboxPath, "no inbox unless Config.Inbox")
	require.Eventually(t, func() bool {
		w, ok := b.worker("t-1")
		return ok && w.Status == client.WorkerStatusWorking && w.Node != nil && *w.Node == "go-1" && w.Meta["queue"] == "go"
	}, waitFor, 10*time.Millisecond, "the slot reports itself working on go-1")

	// Queued while go-1 runs: go-1's completion claims go-2 in the same call.
	b.create(client.NodeCreate{ID: ptrTo("go-2"), Queue: ptrTo("go")})
	close(gate)
	require.Equal(t, "go-2", (<-jobs).Node.ID)
	for _, id := range []string{"go-1", "go-2"} {
		n := b.waitStatus(id, client.NodeStatusDone)
		require.Equal(t, map[string]any{"node": id, "fence": float64(1)}, n.Result)
		require.EqualValues(t, 1, n.Attempts)
		require.Equal(t, map[string]string{"runner": "done"}, b.outcomes(id))
	}

	stop()
	require.NoError(t, returned(t, done))
	w, ok := b.worker("t-1")
	require.True(t, ok)
	require.Equal(t, client.WorkerStatusOffline, w.Status)
}

// An error fails the node with its text; the server requeues it after the
// node's retry backoff (on its clock), and the next attempt completes it.
// Out of attempts, a failure makes it dead.
func TestFailingHandlerIsRetriedAfterBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls atomic.Int32
	h := HandlerFunc(func(ctx context.Context, job *Job) (any, error) {
		if calls.Add(1) == 1 || job.Node.ID == "dead-1" {
			return nil, errors.New("boom: attempt " + job.Node.ID)
		}
		return "second time lucky", nil
	})
	b.start(b.config("retry", h))

	b.create(client.NodeCreate{ID: ptrTo("retry-1"), Queue: ptrTo("retry"), MaxAttempts: ptrTo(int64(2)),
		Backoff: &client.Backoff{InitialMS: 60000, MaxMS: 60000, Factor: 1}})
	n := b.waitNode("retry-1", "failed once", func(n client.Node) bool { return n.Error != nil })
	require.Equal(t, "boom: attempt retry-1", *n.Error)
	require.Equal(t, client.NodeStatusQueued, n.Status)
	require.EqualValues(t, 1, n.Attempts)
	require.NotNil(t, n.RunAt)
	require.True(t, n.RunAt.After(b.srv.Now().Add(30*time.Second)) && !n.RunAt.After(b.srv.Now().Add(time.Minute)),
		"not claimable before the backoff (60 s, with jitter) has passed: run_at %v, now %v", *n.RunAt, b.srv.Now())
	require.EqualValues(t, 1, calls.Load())

	b.srv.Clock.Advance(time.Minute)
	n = b.waitStatus("retry-1", client.NodeStatusDone)
	require.Equal(t, "second time lucky", n.Result)
	require.EqualValues(t, 2, n.Attempts)
	require.EqualValues(t, 2, calls.Load())

	b.create(client.NodeCreate{ID: ptrTo("dead-1"), Queue: ptrTo("retry"), MaxAttempts: ptrTo(int64(1))})
	n = b.waitStatus("dead-1", client.NodeStatusDead)
	require.Equal(t, "boom: attempt dead-1", *n.Error)
	require.Equal(t, map[string]string{"runner": "failed"}, b.outcomes("dead-1"))
}

// A handler that panics fails its node with the panic's value, and the
// runner goes on to the next node.
func TestPanickingHandlerFailsTheNode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := HandlerFunc(func(ctx context.Context, job *Job) (any, error) {
		if job.Node.ID == "panic-1" {
			panic("out of cheese")
		}
		return "fine", nil
	})
	b.start(b.config("panic", h))
	b.create(client.NodeCreate{ID: ptrTo("panic-1"), Queue: ptrTo("panic"), MaxAttempts: ptrTo(int64(1))})
	n := b.waitStatus("panic-1", client.NodeStatusDead)
	require.Equal(t, "the handler panicked: out of cheese", *n.Error)
	b.create(client.NodeCreate{ID: ptrTo("panic-2"), Queue: ptrTo("panic")})
	require.Equal(t, "fine", b.waitStatus("panic-2", client.NodeStatusDone).Result)
}

// Renewals keep a run going past many TTLs: the server's clock moves on by
// most of a TTL at a time, each time after a renewal, and the lease never
// ends; the run completes on its first attempt and fence.
func TestRenewalsKeepALongRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan *Job, 1)
	finish := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, job *Job) (any, error) {
		started <- job
		select {
		case <-finish:
			return "long", nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	cfg := b.config("long", h)
	cfg.TTL = 2 * time.Second
	b.start(cfg)
	b.create(client.NodeCreate{ID: ptrTo("long-1"), Queue: ptrTo("long")})
	job := <-started
	ttl := time.Duration(job.Lease.TTLMS) * time.Millisecond
	require.Equal(t, 2*time.Second, ttl)

	for range 5 { // 5 × 1.5 s: well past the 2 s TTL
		now := b.srv.Now()
		b.waitNode("long-1", "a renewal after "+now.String(), func(n client.Node) bool {
			return n.Lease != nil && !n.Lease.ExpiresAt.Before(now.Add(ttl))
		})
		b.srv.Clock.Advance(ttl * 3 / 4)
	}
	close(finish)
	n := b.waitStatus("long-1", client.NodeStatusDone)
	require.Equal(t, "long", n.Result)
	require.EqualValues(t, 1, n.Attempts)
	require.Equal(t, map[string]string{"runner": "done"}, b.outcomes("long-1"))
}

// Stopping ends the claims; a handler that finishes within the grace
// completes its node; past the grace (or at Kill) its context ends and the
// node is released, its attempt given back.
func TestStopGivesTheGraceThenReleases(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("within the grace the run completes", func(t *testing.T) {
		t.Parallel()
		started := make(chan struct{}, 1)
		finish := make(chan struct{})
		h := HandlerFunc(func(ctx context.Context, job *Job) (any, error) {
			started <- struct{}{}
			<-finish
			return "finished", ctx.Err()
		})
		cfg := b.config("grace", h)
		cfg.Grace = time.Minute
		r, stop, done := b.start(cfg)
		b.create(client.NodeCreate{ID: ptrTo("grace-1"), Queue: ptrTo("grace")})
		<-started
		stop()
		b.create(client.NodeCreate{ID: ptrTo("grace-2"), Queue: ptrTo("grace")})
		select {
		case <-done:
			t.Fatal("Run returned while a handler ran within its grace")
		default:
		}
		close(finish)
		require.NoError(t, returned(t, done))
		require.Equal(t, "finished", b.waitStatus("grace-1", client.NodeStatusDone).Result)
		n := b.node("grace-2")
		require.Equal(t, client.NodeStatusQueued, n.Status, "no claims once stopped")
		require.EqualValues(t, 0, n.Attempts)
		r.Kill() // a no-op now
	})

	t.Run("past the grace the node is released", func(t *testing.T) {
		t.Parallel()
		started := make(chan struct{}, 1)
		var cause atomic.Value
		h := HandlerFunc(func(ctx context.Context, job *Job) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			cause.Store(context.Cause(ctx))
			return nil, ctx.Err()
		})
		_, stop, done := b.start(b.config("release", h)) // no grace
		b.create(client.NodeCreate{ID: ptrTo("release-1"), Queue: ptrTo("release")})
		<-started
		stop()
		require.NoError(t, returned(t, done))
		require.ErrorIs(t, cause.Load().(error), errStopping)
		n := b.node("release-1")
		require.Equal(t, client.NodeStatusQueued, n.Status, "released back to its queue")
		require.Nil(t, n.Lease)
		require.EqualValues(t, 0, n.Attempts, "a release gives the attempt back")
		require.Equal(t, map[string]string{"runner": "released"}, b.outcomes("release-1"))
	})

	t.Run("Kill ends the grace", func(t *testing.T) {
		t.Parallel()
		started := make(chan struct{}, 1)
		h := HandlerFunc(func(ctx context.Context, job *Job) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
		cfg := b.config("kill", h)
		cfg.Grace = time.Hour
		r, stop, done := b.start(cfg)
		b.create(client.NodeCreate{ID: ptrTo("kill-1"), Queue: ptrTo("kill")})
		<-started
		stop()
		r.Kill()
		require.NoError(t, returned(t, done))
		require.Equal(t, client.NodeStatusQueued, b.node("kill-1").Status)
	})
}

// A lost lease (here the node is cancelled) ends the handler's context and
// nothing is reported for the run: the node stays as the server left it.
func TestLostLeaseStopsTheHandler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	h := HandlerFunc(func(ctx context.Context, job *Job) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, errors.New("must not be reported")
	})
	b.start(b.config("lost", h))
	b.create(client.NodeCreate{ID: ptrTo("lost-1"), Queue: ptrTo("lost")})
	<-started
	res, err := b.head.CancelNodeWithResponse(context.Background(), "lost-1", client.CancelRequest{})
	require.NoError(t, err)
	require.NoError(t, client.CheckResponse(res.HTTPResponse, res.Body))
	select {
	case cause := <-causes:
		require.ErrorIs(t, cause, errLeaseLost)
	case <-time.After(waitFor):
		t.Fatal("the handler's context did not end when its lease was lost")
	}
	n := b.node("lost-1")
	require.Equal(t, client.NodeStatusCancelled, n.Status)
	require.Nil(t, n.Error, "the handler's error was not reported")
}

// A token the server refuses stops the runner: Run returns why.
func TestRefusedClaimStopsTheRunner(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("refused", HandlerFunc(func(context.Context, *Job) (any, error) { return nil, nil }))
	cfg.Token = "not-a-token"
	_, _, done := b.start(cfg)
	err := returned(t, done)
	require.ErrorContains(t, err, "claiming from queue refused")
	require.True(t, client.IsCode(err, client.ProblemCodeUnauthorized), "%v", err)
}

func TestNewRefusesABadConfig(t *testing.T) {
	t.Parallel()
	ok := Config{Server: "http://127.0.0.1:1", Token: "t", Queue: "q", Handler: &Exec{Argv: []string{"true"}}}
	_, err := New(ok)
	require.NoError(t, err)
	for want, change := range map[string]func(*Config){
		"Server is empty":          func(c *Config) { c.Server = "" },
		"Token is empty":           func(c *Config) { c.Token = "" },
		"Queue is empty":           func(c *Config) { c.Queue = "" },
		"Handler is nil":           func(c *Config) { c.Handler = nil },
		"Slots must be from 1":     func(c *Config) { c.Slots = MaxSlots + 1 },
		"TTL must be at least 1s":  func(c *Config) { c.TTL = time.Millisecond },
		"Grace must not be":        func(c *Config) { c.Grace = -1 },
		"Heartbeat must be at":     func(c *Config) { c.Heartbeat = time.Millisecond },
		"RenewEvery must not be":   func(c *Config) { c.RenewEvery = -1 },
		"Backoff must have 0 <= M": func(c *Config) { c.Backoff = Backoff{Min: time.Second, Max: time.Millisecond} },
	} {
		c := ok
		change(&c)
		_, err := New(c)
		require.ErrorContains(t, err, want)
	}
}
