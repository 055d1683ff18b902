package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-run/tether/client"
)

// claimWait is how long one claim-next long poll waits for a node.
const claimWait = 30 * time.Second

// maxThrottleWait bounds the wait after a throttled claim, however far off
// the server's Retry-After (a budget's window may roll over in an hour): a
// limit raised meanwhile is seen within it.
const maxThrottleWait = time.Minute

// Why a run was stopped: the cause of its context.
var (
	errLeaseLost = errors.New("the lease was lost")
	errTimeout   = errors.New("the node's timeout_ms passed")
	errStopping  = errors.New("the runner is stopping")
)

// slot is one loop of claim, run, report. It reports its state in the
// worker registry under its name.
type slot struct {
	r    *Runner
	name string
	log  *slog.Logger
	busy atomic.Bool // a handler is running

	mu       sync.Mutex
	status   client.WorkerStatus
	node     string
	reported bool // set has been called
	changed  chan struct{}
}

func newSlot(r *Runner, name string) *slot {
	return &slot{r: r, name: name, log: r.log.With("slot", name), status: client.WorkerStatusIdle, changed: make(chan struct{}, 1)}
}

// hold is a node this slot holds.
type hold struct {
	lease       client.Lease
	node        json.RawMessage // the node as the server sent it
	nodeObj     client.Node     // the same, decoded
	timeout     time.Duration   // the node's timeout_ms; 0 for none
	at          time.Time       // when the claim came back
	traceparent string          // the creating request's trace context; "" for none
}

// run claims and runs nodes until the runner stops claiming, then reports
// the slot offline.
func (s *slot) run() {
	hbCtx, hbStop := context.WithCancel(context.Background())
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		s.heartbeats(hbCtx)
	}()
	defer func() {
		hbStop()
		<-hbDone
		s.set(client.WorkerStatusOffline, "")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.beat(ctx)
	}()

	bo := newBackoff(s.r.cfg.Backoff)
	// next is the node the last completion claimed in the same call.
	var next *hold
	for s.r.stopping.Err() == nil {
		if c := next; c != nil {
			next = s.work(c)
			continue
		}
		s.set(client.WorkerStatusIdle, "")
		c, err := s.claim()
		var th *throttledErr
		if errors.As(err, &th) {
			// Flow control held the queue's nodes back: wait as the server
			// asks instead of asking again at once.
			d := min(bo.delay(th.RetryAfter), maxThrottleWait)
			s.log.Info("claims are throttled; waiting", "reason", th.Reason, "key", th.Key, "in", d.Round(time.Millisecond).String())
			sleep(s.r.stopping, d)
			continue
		}
		if err != nil {
			var ce *callErr
			if errors.As(err, &ce) && !ce.transient() && ce.status != http.StatusConflict {
				s.r.failed(fmt.Errorf("claiming from queue %s: %w", s.r.cfg.Queue, err))
				return
			}
			d := bo.delay(ce.retryAfter())
			s.log.Warn("error claiming; retrying", "err", err, "in", d.Round(time.Millisecond).String())
			sleep(s.r.stopping, d)
			continue
		}
		bo.reset()
		if c == nil {
			continue
		}
		if s.r.stopping.Err() != nil {
			// The claim crossed the signal: give the node back untouched.
			s.release(c)
			return
		}
		next = s.work(c)
	}
	if next != nil {
		// The completion's claim crossed the signal: give it back untouched.
		s.release(next)
	}
}

// claim waits (a long poll) for the next node of the queue; nil when none
// came, or when the runner stopped claiming meanwhile; a *throttledErr when
// none came because flow control (a concurrency limit, a start rate, a
// budget) held the queue's nodes back.
func (s *slot) claim() (*hold, error) {
	o := s.r.cfg
	req := client.ClaimNextRequest{TTLMS: ptrTo(o.TTL.Milliseconds()), WaitMS: ptrTo(claimWait.Milliseconds())}
	if len(o.Types) > 0 {
		req.Types = &o.Types
	}
	if len(o.Labels) > 0 {
		req.Labels = &o.Labels
	}
	ctx, cancel := context.WithTimeout(s.r.stopping, claimWait+30*time.Second)
	defer cancel()
	res, err := s.r.api.ClaimNextWithResponse(ctx, o.Queue, req)
	if s.r.stopping.Err() != nil && err != nil {
		return nil, nil
	}
	if err != nil {
		return nil, &callErr{err: err}
	}
	switch res.StatusCode() {
	case http.StatusNoContent:
		if th := client.ThrottleOf(res.HTTPResponse); th != nil {
			return nil, &throttledErr{*th}
		}
		return nil, nil
	case http.StatusOK:
	default:
		return nil, problem(res.HTTPResponse, res.Body)
	}
	var raw struct {
		Node json.RawMessage `json:"node"`
	}
	if res.JSON200 == nil || json.Unmarshal(res.Body, &raw) != nil {
		return nil, &callErr{err: fmt.Errorf("claim answered %d with an unexpected body", res.StatusCode())}
	}
	return s.holdOf(res.JSON200, raw.Node), nil
}

// holdOf is the hold of a claim answer whose node is raw.
func (s *slot) holdOf(cr *client.ClaimResponse, raw json.RawMessage) *hold {
	c := &hold{lease: cr.Lease, node: raw, nodeObj: cr.Node, at: time.Now(), traceparent: traceparentOf(cr.Node)}
	if cr.Node.TimeoutMS != nil {
		c.timeout = time.Duration(*cr.Node.TimeoutMS) * time.Millisecond
	}
	if cr.CappedToMax != nil && *cr.CappedToMax {
		s.log.Info("the server capped the lease TTL", "ttl_ms", cr.Lease.TTLMS)
	}
	return c
}

// nextRequest asks a completion for the next node of the queue, without
// waiting: when none is ready the slot goes back to its long poll.
func (s *slot) nextRequest() *client.NextClaimRequest {
	o := s.r.cfg
	req := &client.NextClaimRequest{Queue: o.Queue, TTLMS: ptrTo(o.TTL.Milliseconds())}
	if len(o.Types) > 0 {
		req.Types = &o.Types
	}
	if len(o.Labels) > 0 {
		req.Labels = &o.Labels
	}
	return req
}

// work runs the handler for c while keeping its lease, and reports how the
// run ended. A completion asks for the next node in the same call: work
// returns it, or nil.
func (s *slot) work(c *hold) *hold {
	s.busy.Store(true)
	defer s.busy.Store(false)
	id, fence := c.lease.NodeID, c.lease.Fence
	log := s.log.With("node", id, "fence", fence)
	s.set(client.WorkerStatusWorking, id)
	log.Info("running")

	// The lease's end as we reckon it, moved on by every renewal: reports
	// are retried until then and no longer.
	var leaseEnd atomic.Int64
	ttl := time.Duration(c.lease.TTLMS) * time.Millisecond
	leaseEnd.Store(c.at.Add(ttl).UnixNano())
	keepOpts := []client.KeepOption{client.KeepOnRenew(func(r client.RenewResponse) {
		leaseEnd.Store(time.Now().Add(time.Duration(r.Lease.TTLMS) * time.Millisecond).UnixNano())
	})}
	if s.r.cfg.RenewEvery > 0 {
		keepOpts = append(keepOpts, client.KeepInterval(s.r.cfg.RenewEvery))
	}
	kept, stopKeeping := client.Keep(context.Background(), s.r.api, id, c.lease, keepOpts...)

	run, stopRun := context.WithCancelCause(s.r.base)
	defer stopRun(nil)
	unlost := context.AfterFunc(kept, func() { stopRun(errLeaseLost) })
	unkill := context.AfterFunc(s.r.killing, func() { stopRun(errStopping) })
	if c.timeout > 0 {
		t := time.AfterFunc(c.timeout-time.Since(c.at), func() { stopRun(errTimeout) })
		defer t.Stop()
	}

	job := &Job{
		Node: c.nodeObj, NodeJSON: c.node, Lease: c.lease, Worker: s.name,
		Server: s.r.cfg.Server, Token: s.r.cfg.Token, Client: s.r.api, Log: log,
	}
	stopInbox := func() {}
	if s.r.cfg.Inbox {
		job.inbox, stopInbox = s.startInbox(run, log, id)
		if job.inbox != nil {
			job.InboxPath = job.inbox.path
		}
	}
	ctx, span := s.startRun(run, c)
	start := time.Now()
	result, err := s.handle(ctx, job)
	stopped := run.Err() != nil
	endRun(span, err)
	stopInbox()
	unlost()
	unkill()
	keepErr := stopKeeping()
	log = log.With("took", time.Since(start).Round(time.Millisecond).String())

	rctx, cancel := s.reportContext(time.Unix(0, leaseEnd.Load()))
	defer cancel()
	switch cause := context.Cause(run); {
	case err == nil:
		return s.complete(rctx, log, id, fence, result)
	case stopped && errors.Is(cause, errLeaseLost):
		log.Warn("the lease was lost: the run was stopped", "err", err, "why", keepErr)
	case stopped && errors.Is(cause, errTimeout):
		// The server's deadline (claimed_at + timeout_ms) came before ours:
		// the run has already ended there, with error "timeout".
		log.Warn("the node's timeout_ms passed: the run was stopped", "timeout", c.timeout.String(), "err", err)
	case stopped:
		log.Info("the run was stopped: releasing the node", "err", err)
		s.report(rctx, log, "release", s.releaseCall(id, fence))
	default:
		log.Info("the run failed", "err", err)
		s.report(rctx, log, "fail", s.failCall(id, fence, err.Error()))
	}
	return nil
}

// handle runs the handler; a panic in it fails the run (its node is
// failed with the panic's value) instead of ending the process.
func (s *slot) handle(ctx context.Context, job *Job) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			job.Log.Error("the handler panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			result, err = nil, fmt.Errorf("the handler panicked: %v", p)
		}
	}()
	return s.r.cfg.Handler.Work(ctx, job)
}

// startInbox makes the run's inbox file, fills it with the messages
// already sent to the node, and keeps it current until stop is called
// (which also removes it). Without a file (nil) the handler runs anyway.
func (s *slot) startInbox(run context.Context, log *slog.Logger, id string) (_ *inbox, stop func()) {
	in, err := newInbox(s.r.api, log, id, s.r.cfg.Backoff)
	if err != nil {
		log.Warn("the handler runs without an inbox file", "err", err)
		return nil, func() {}
	}
	first, cancel := context.WithTimeout(run, 10*time.Second)
	if err := in.poll(first, 0); err != nil {
		log.Warn("error reading the node's inbox", "err", err)
	}
	cancel()
	ctx, cancel := context.WithCancel(run)
	done := make(chan struct{})
	go func() {
		defer close(done)
		in.run(ctx)
	}()
	return in, func() {
		cancel()
		<-done
		in.remove()
	}
}

// complete records result and, unless the runner is stopping, claims the
// next ready node in the same call (one round trip per node while the
// queue has work) and returns it. A result the server refuses as too large
// is shrunk (Shrinker) until it fits.
func (s *slot) complete(ctx context.Context, log *slog.Logger, id string, fence int64, result any) *hold {
	for {
		var next *hold
		err := s.report(ctx, log, "complete", func(ctx context.Context) (*http.Response, []byte, error) {
			req := client.CompleteRequest{Fence: &fence, Result: resultValue(result)}
			if s.r.stopping.Err() == nil {
				req.Next = s.nextRequest()
			}
			res, err := s.r.api.CompleteNodeWithResponse(ctx, id, req)
			if err != nil {
				return nil, nil, err
			}
			next = nil
			if res.JSON200 != nil && res.JSON200.Next != nil {
				var raw struct {
					Next struct {
						Node json.RawMessage `json:"node"`
					} `json:"next"`
				}
				if err := json.Unmarshal(res.Body, &raw); err != nil {
					return nil, nil, fmt.Errorf("complete answered with an unexpected body: %w", err)
				}
				next = s.holdOf(res.JSON200.Next, raw.Next.Node)
			}
			return res.HTTPResponse, res.Body, nil
		})
		if err == nil {
			if next != nil {
				log.Info("the completion claimed the next node", "next", next.lease.NodeID)
			}
			return next
		}
		sh, ok := result.(Shrinker)
		if !ok || !client.IsCode(err, client.ProblemCodePayloadTooLarge) {
			if client.IsCode(err, client.ProblemCodePayloadTooLarge) {
				log.Error("not reported: the result is over the server's body limit", "err", err)
			}
			return nil
		}
		if result, ok = sh.Shrink(); !ok {
			log.Error("not reported: the result is over the server's body limit and cannot shrink", "err", err)
			return nil
		}
		log.Warn("the result is over the server's body limit: shrinking it")
	}
}

// reportCall is one attempt at a report: the answer, or a transport error.
type reportCall func(context.Context) (*http.Response, []byte, error)

func (s *slot) failCall(id string, fence int64, msg string) reportCall {
	return func(ctx context.Context) (*http.Response, []byte, error) {
		res, err := s.r.api.FailNodeWithResponse(ctx, id, client.FailRequest{Fence: &fence, Error: msg})
		if err != nil {
			return nil, nil, err
		}
		return res.HTTPResponse, res.Body, nil
	}
}

func (s *slot) releaseCall(id string, fence int64) reportCall {
	return func(ctx context.Context) (*http.Response, []byte, error) {
		res, err := s.r.api.ReleaseNodeWithResponse(ctx, id, client.ReleaseRequest{Fence: &fence, Reason: ptrTo("runner stopping")})
		if err != nil {
			return nil, nil, err
		}
		return res.HTTPResponse, res.Body, nil
	}
}

// release gives back a node whose handler never started.
func (s *slot) release(c *hold) {
	ctx, cancel := s.reportContext(c.at.Add(time.Duration(c.lease.TTLMS) * time.Millisecond))
	defer cancel()
	log := s.log.With("node", c.lease.NodeID, "fence", c.lease.Fence)
	s.report(ctx, log, "release", s.releaseCall(c.lease.NodeID, c.lease.Fence))
}

// reportContext bounds the retries of a report: past the lease's end it
// cannot succeed, and once the runner is killing its handlers it has 10 s
// more.
func (s *slot) reportContext(leaseEnd time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithDeadline(context.Background(), leaseEnd)
	stop := context.AfterFunc(s.r.killing, func() {
		t := time.AfterFunc(10*time.Second, cancel)
		context.AfterFunc(ctx, func() { t.Stop() })
	})
	return ctx, func() { stop(); cancel() }
}

// report makes call until the server gives a definitive answer (retrying
// network errors, 5xx and 429 with backoff) or ctx ends, and logs the
// outcome. It returns the last error.
func (s *slot) report(ctx context.Context, log *slog.Logger, what string, call reportCall) error {
	bo := newBackoff(s.r.cfg.Backoff)
	for {
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, body, err := call(callCtx)
		cancel()
		if err == nil {
			err = problem(resp, body)
			if err == nil {
				log.Info("reported", "op", what)
				return nil
			}
		} else {
			err = &callErr{err: err}
		}
		var ce *callErr
		if !errors.As(err, &ce) || !ce.transient() {
			if client.IsCode(err, client.ProblemCodeLeaseLost) {
				log.Warn("not reported: the lease is gone", "op", what, "err", err)
			} else if !client.IsCode(err, client.ProblemCodePayloadTooLarge) {
				log.Error("not reported", "op", what, "err", err)
			}
			return err
		}
		d := bo.delay(ce.retryAfter())
		if !sleep(ctx, d) {
			log.Error("not reported: gave up retrying", "op", what, "err", err)
			return err
		}
	}
}

// heartbeats reports the slot's state whenever it changes, and every
// Heartbeat when it does not, until ctx ends.
func (s *slot) heartbeats(ctx context.Context) {
	t := time.NewTicker(s.r.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
		case <-t.C:
		}
		// Not cut short when ctx ends: an abandoned request could still
		// land on the server after the slot's last beat (offline) and
		// leave it shown idle. beat has a timeout of its own.
		s.beat(context.WithoutCancel(ctx))
	}
}

// set changes the state the heartbeats report; a change is reported at once.
func (s *slot) set(status client.WorkerStatus, node string) {
	s.mu.Lock()
	same := s.reported && s.status == status && s.node == node
	s.status, s.node, s.reported = status, node, true
	s.mu.Unlock()
	if same {
		return
	}
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// beat posts the slot's state once. Heartbeats are best effort: a failure is
// logged and the next one tries again.
func (s *slot) beat(ctx context.Context) {
	s.mu.Lock()
	hb := client.WorkerHeartbeat{Worker: s.name, Status: s.status, Meta: &s.r.meta}
	if s.node != "" {
		hb.Node = ptrTo(s.node)
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := s.r.api.HeartbeatWorkerWithResponse(ctx, hb)
	if err == nil {
		err = problem(res.HTTPResponse, res.Body)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("error posting a heartbeat", "status", hb.Status, "err", err)
	}
}

// callErr is a call that did not get the answer it wanted; status is 0
// when no answer came.
type callErr struct {
	status int
	after  time.Duration // the server's Retry-After
	err    error
}

func (e *callErr) Error() string { return e.err.Error() }
func (e *callErr) Unwrap() error { return e.err }

func (e *callErr) transient() bool { return transient(e.status) }

func (e *callErr) retryAfter() time.Duration {
	if e == nil {
		return 0
	}
	return e.after
}

// throttledErr is a claim that handed out nothing because of flow control.
type throttledErr struct{ client.Throttle }

func (e *throttledErr) Error() string {
	return fmt.Sprintf("claims throttled (%s, key %q)", e.Reason, e.Key)
}

// problem is nil for a status below 400, else the answer's problem.
func problem(resp *http.Response, body []byte) error {
	err := client.CheckResponse(resp, body)
	if err == nil {
		return nil
	}
	return &callErr{status: resp.StatusCode, after: client.RetryAfter(resp), err: err}
}

func ptrTo[T any](v T) *T { return &v }
