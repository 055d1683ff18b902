package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-run/tether/client"
)

// workClaimWait is how long one claim-next long poll waits for a node.
const workClaimWait = 30 * time.Second

// Why a running command was stopped.
var (
	errWorkLeaseLost = errors.New("the lease was lost")
	errWorkTimeout   = errors.New("the node's timeout_ms passed")
	errWorkStopping  = errors.New("the runner is stopping")
)

// workSlot is one loop of claim, run, report. It reports its state in the
// worker registry under its name.
type workSlot struct {
	r    *workRunner
	name string
	log  *slog.Logger
	busy atomic.Bool // a command is running

	mu       sync.Mutex
	status   client.WorkerStatus
	node     string
	reported bool // set has been called
	changed  chan struct{}
}

func newWorkSlot(r *workRunner, name string) *workSlot {
	return &workSlot{r: r, name: name, log: r.log.With("slot", name), status: client.WorkerStatusIdle, changed: make(chan struct{}, 1)}
}

// workClaim is a node this slot holds.
type workClaim struct {
	lease       client.Lease
	node        json.RawMessage // the node as the server sent it
	timeout     time.Duration   // the node's timeout_ms; 0 for none
	at          time.Time       // when the claim came back
	traceparent string          // the creating request's trace context; "" for none
}

// run claims and runs nodes until the runner stops claiming, then reports
// the slot offline.
func (s *workSlot) run() {
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

	var bo workBackoff
	// next is the node the last completion claimed in the same call.
	var next *workClaim
	for s.r.stopping.Err() == nil {
		if c := next; c != nil {
			next = s.work(c)
			continue
		}
		s.set(client.WorkerStatusIdle, "")
		c, err := s.claim()
		if err != nil {
			var ce *workCallErr
			if errors.As(err, &ce) && !ce.transient() && ce.status != http.StatusConflict {
				s.r.failed(fmt.Errorf("claiming from queue %s: %w", s.r.opts.queue, err))
				return
			}
			d := bo.delay(ce.retryAfter())
			s.log.Warn("error claiming; retrying", "err", err, "in", d.Round(time.Millisecond).String())
			workSleep(s.r.stopping, d)
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
// came, or when the runner stopped claiming meanwhile.
func (s *workSlot) claim() (*workClaim, error) {
	o := s.r.opts
	req := client.ClaimNextRequest{TTLMS: ptrTo(o.ttl.Milliseconds()), WaitMS: ptrTo(workClaimWait.Milliseconds())}
	if len(o.types) > 0 {
		req.Types = &o.types
	}
	if len(o.labels) > 0 {
		req.Labels = &o.labels
	}
	ctx, cancel := context.WithTimeout(s.r.stopping, workClaimWait+30*time.Second)
	defer cancel()
	res, err := s.r.api.ClaimNextWithResponse(ctx, o.queue, req)
	if s.r.stopping.Err() != nil && err != nil {
		return nil, nil
	}
	if err != nil {
		return nil, &workCallErr{err: err}
	}
	switch res.StatusCode() {
	case http.StatusNoContent:
		return nil, nil
	case http.StatusOK:
	default:
		return nil, workProblem(res.HTTPResponse, res.Body)
	}
	var raw struct {
		Node json.RawMessage `json:"node"`
	}
	if res.JSON200 == nil || json.Unmarshal(res.Body, &raw) != nil {
		return nil, &workCallErr{err: fmt.Errorf("claim answered %d with an unexpected body", res.StatusCode())}
	}
	return s.claimed(res.JSON200, raw.Node), nil
}

// claimed is the workClaim of a claim answer whose node is raw.
func (s *workSlot) claimed(cr *client.ClaimResponse, raw json.RawMessage) *workClaim {
	c := &workClaim{lease: cr.Lease, node: raw, at: time.Now(), traceparent: traceparentOf(cr.Node)}
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
func (s *workSlot) nextRequest() *client.NextClaimRequest {
	o := s.r.opts
	req := &client.NextClaimRequest{Queue: o.queue, TTLMS: ptrTo(o.ttl.Milliseconds())}
	if len(o.types) > 0 {
		req.Types = &o.types
	}
	if len(o.labels) > 0 {
		req.Labels = &o.labels
	}
	return req
}

// work runs the command for c while keeping its lease, and reports how it
// ended. A completion asks for the next node in the same call: work returns
// it, or nil.
func (s *workSlot) work(c *workClaim) *workClaim {
	s.busy.Store(true)
	defer s.busy.Store(false)
	id, fence := c.lease.NodeID, c.lease.Fence
	log := s.log.With("node", id, "fence", fence)
	s.set(client.WorkerStatusWorking, id)
	log.Info("running the command")

	// The lease's end as we reckon it, moved on by every renewal: reports
	// are retried until then and no longer.
	var leaseEnd atomic.Int64
	ttl := time.Duration(c.lease.TTLMS) * time.Millisecond
	leaseEnd.Store(c.at.Add(ttl).UnixNano())
	kept, stopKeeping := client.Keep(context.Background(), s.r.api, id, c.lease,
		client.KeepOnRenew(func(r client.RenewResponse) {
			leaseEnd.Store(time.Now().Add(time.Duration(r.Lease.TTLMS) * time.Millisecond).UnixNano())
		}))

	run, stopRun := context.WithCancelCause(context.Background())
	defer stopRun(nil)
	unlost := context.AfterFunc(kept, func() { stopRun(errWorkLeaseLost) })
	unkill := context.AfterFunc(s.r.killing, func() { stopRun(errWorkStopping) })
	if c.timeout > 0 {
		t := time.AfterFunc(c.timeout-time.Since(c.at), func() { stopRun(errWorkTimeout) })
		defer t.Stop()
	}

	o := s.r.opts
	env := append(os.Environ(),
		"TETHER_NODE_ID="+id,
		"TETHER_FENCE="+strconv.FormatInt(fence, 10),
		"TETHER_URL="+o.server,
		"TETHER_TOKEN="+o.token,
		"TETHER_WORKER="+s.name,
	)
	inbox, stopInbox := s.startInbox(run, log, id)
	var started func(*os.Process)
	if inbox != nil {
		env = append(env, "TETHER_INBOX="+inbox.path)
		started = inbox.started
	}
	span, env := s.startRun(c, env)
	start := time.Now()
	x := workExec(run.Done(), o.command, env, c.node, os.Stderr, started)
	endRun(span, x)
	stopInbox()
	unlost()
	unkill()
	keepErr := stopKeeping()
	log = log.With("took", time.Since(start).Round(time.Millisecond).String())

	ctx, cancel := s.reportContext(time.Unix(0, leaseEnd.Load()))
	defer cancel()
	switch cause := context.Cause(run); {
	case x.err != nil:
		log.Error("the command could not start", "err", x.err)
		s.report(ctx, log, "fail", s.failCall(id, fence, "the command could not start: "+x.err.Error()))
	case x.stopped && errors.Is(cause, errWorkLeaseLost):
		log.Warn("the lease was lost: the command was stopped", "exit", x.how, "why", keepErr)
	case x.stopped && errors.Is(cause, errWorkTimeout):
		// The server's deadline (claimed_at + timeout_ms) came before ours:
		// the run has already ended there, with error "timeout".
		log.Warn("the node's timeout_ms passed: the command was stopped", "timeout", c.timeout.String(), "exit", x.how)
	case x.stopped:
		log.Info("the command was stopped: releasing the node", "exit", x.how)
		s.report(ctx, log, "release", s.releaseCall(id, fence))
	case x.code == 0:
		return s.complete(ctx, log, id, fence, x)
	default:
		log.Info("the command failed", "exit", x.how)
		s.report(ctx, log, "fail", s.failCall(id, fence, x.errorText()))
	}
	return nil
}

// startInbox makes the command's inbox file, fills it with the messages
// already sent to the node, and keeps it current until stop is called
// (which also removes it). Without a file (nil) the command runs anyway.
func (s *workSlot) startInbox(run context.Context, log *slog.Logger, id string) (_ *workInbox, stop func()) {
	in, err := newWorkInbox(s.r.api, log, id, s.r.opts.inboxSignal)
	if err != nil {
		log.Warn("the command runs without an inbox file", "err", err)
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

// complete records stdout as the result and, unless the runner is stopping,
// claims the next ready node in the same call (one round trip per node
// while the queue has work) and returns it. A result too large for the
// server's body limit is truncated further until it fits.
func (s *workSlot) complete(ctx context.Context, log *slog.Logger, id string, fence int64, x workExit) *workClaim {
	if x.stdoutBytes > workMaxResult {
		log.Warn("the output is over 1 MiB: the result keeps its start", "bytes", x.stdoutBytes)
	}
	for keep := workMaxResult; ; keep /= 4 {
		result := x.result(keep)
		var next *workClaim
		err := s.report(ctx, log, "complete", func(ctx context.Context) (*http.Response, []byte, error) {
			req := client.CompleteRequest{Fence: &fence, Result: result}
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
				next = s.claimed(res.JSON200.Next, raw.Next.Node)
			}
			return res.HTTPResponse, res.Body, nil
		})
		if err == nil {
			if next != nil {
				log.Info("the completion claimed the next node", "next", next.lease.NodeID)
			}
			return next
		}
		if !client.IsCode(err, client.ProblemCodePayloadTooLarge) || keep == 0 {
			return nil
		}
		log.Warn("the result is over the server's body limit: truncating it further", "kept", keep/4)
	}
}

// workCall is one attempt at a report: the answer, or a transport error.
type workCall func(context.Context) (*http.Response, []byte, error)

func (s *workSlot) failCall(id string, fence int64, msg string) workCall {
	return func(ctx context.Context) (*http.Response, []byte, error) {
		res, err := s.r.api.FailNodeWithResponse(ctx, id, client.FailRequest{Fence: &fence, Error: msg})
		if err != nil {
			return nil, nil, err
		}
		return res.HTTPResponse, res.Body, nil
	}
}

func (s *workSlot) releaseCall(id string, fence int64) workCall {
	return func(ctx context.Context) (*http.Response, []byte, error) {
		res, err := s.r.api.ReleaseNodeWithResponse(ctx, id, client.ReleaseRequest{Fence: &fence, Reason: ptrTo("runner stopping")})
		if err != nil {
			return nil, nil, err
		}
		return res.HTTPResponse, res.Body, nil
	}
}

// release gives back a node whose command never started.
func (s *workSlot) release(c *workClaim) {
	ctx, cancel := s.reportContext(c.at.Add(time.Duration(c.lease.TTLMS) * time.Millisecond))
	defer cancel()
	log := s.log.With("node", c.lease.NodeID, "fence", c.lease.Fence)
	s.report(ctx, log, "release", s.releaseCall(c.lease.NodeID, c.lease.Fence))
}

// reportContext bounds the retries of a report: past the lease's end it
// cannot succeed, and once the runner is killing its commands it has 10 s
// more.
func (s *workSlot) reportContext(leaseEnd time.Time) (context.Context, context.CancelFunc) {
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
func (s *workSlot) report(ctx context.Context, log *slog.Logger, what string, call workCall) error {
	var bo workBackoff
	for {
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, body, err := call(callCtx)
		cancel()
		if err == nil {
			err = workProblem(resp, body)
			if err == nil {
				log.Info("reported", "op", what)
				return nil
			}
		} else {
			err = &workCallErr{err: err}
		}
		var ce *workCallErr
		if !errors.As(err, &ce) || !ce.transient() {
			if client.IsCode(err, client.ProblemCodeLeaseLost) {
				log.Warn("not reported: the lease is gone", "op", what, "err", err)
			} else if !client.IsCode(err, client.ProblemCodePayloadTooLarge) {
				log.Error("not reported", "op", what, "err", err)
			}
			return err
		}
		d := bo.delay(ce.retryAfter())
		if !workSleep(ctx, d) {
			log.Error("not reported: gave up retrying", "op", what, "err", err)
			return err
		}
	}
}

// heartbeats reports the slot's state whenever it changes, and every
// --heartbeat when it does not, until ctx ends.
func (s *workSlot) heartbeats(ctx context.Context) {
	t := time.NewTicker(s.r.opts.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
		case <-t.C:
		}
		s.beat(ctx)
	}
}

// set changes the state the heartbeats report; a change is reported at once.
func (s *workSlot) set(status client.WorkerStatus, node string) {
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
func (s *workSlot) beat(ctx context.Context) {
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
		err = workProblem(res.HTTPResponse, res.Body)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("error posting a heartbeat", "status", hb.Status, "err", err)
	}
}

// workCallErr is a call that did not get the answer it wanted; status is 0
// when no answer came.
type workCallErr struct {
	status int
	after  time.Duration // the server's Retry-After
	err    error
}

func (e *workCallErr) Error() string { return e.err.Error() }
func (e *workCallErr) Unwrap() error { return e.err }

func (e *workCallErr) transient() bool { return workTransient(e.status) }

func (e *workCallErr) retryAfter() time.Duration {
	if e == nil {
		return 0
	}
	return e.after
}

// workProblem is nil for a status below 400, else the answer's problem.
func workProblem(resp *http.Response, body []byte) error {
	err := client.CheckResponse(resp, body)
	if err == nil {
		return nil
	}
	return &workCallErr{status: resp.StatusCode, after: workRetryAfter(resp), err: err}
}

func ptrTo[T any](v T) *T { return &v }
