package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/tether-run/tether/internal/clock"
)

// ErrLeaseLost is the cause of a kept context that ended because the lease is
// gone: the server answered that it lapsed, was taken or was ended (the
// cause then also wraps that *Problem, so IsCode(cause, ProblemCodeLeaseLost)
// tells which), or its expiry passed before a renewal got through (the cause
// then wraps the last renewal error).
var ErrLeaseLost = errors.New("lease lost")

// KeepOption changes how Keep renews a lease.
type KeepOption func(*keeper)

// KeepInterval renews every d instead of every third of the lease's TTL. d
// must be below the TTL to be of use; otherwise it is ignored.
func KeepInterval(d time.Duration) KeepOption {
	return func(k *keeper) { k.interval = d }
}

// KeepBackoff sets the delays between retries of a renewal that failed for a
// transient reason (a network error, a 5xx, a 429): initial, doubling up to
// most, each with some jitter. The default is 200ms up to 5s; an initial
// delay that is not positive keeps the default. Retries never go past the
// lease's expiry.
func KeepBackoff(initial, most time.Duration) KeepOption {
	return func(k *keeper) {
		if initial > 0 {
			k.backoffMin, k.backoffMax = initial, max(initial, most)
		}
	}
}

// KeepOnRenew calls f after every successful renewal, from the keeper's
// goroutine; f must return quickly. RenewResponse.InboxUnread tells an agent
// that someone is steering it.
func KeepOnRenew(f func(RenewResponse)) KeepOption {
	return func(k *keeper) { k.onRenew = f }
}

// Keep holds a lease while its holder works: it renews the lease at a third
// of its TTL (passing its fence and session, so it renews this lease and no
// later one) and returns a context that ends when the lease is lost, with a
// cause wrapping ErrLeaseLost (see context.Cause), and a stop function.
//
// A renewal that fails transiently (network error, 5xx, 429) is retried with
// backoff until the lease's expiry, which the keeper reckons on its own clock
// from when it sent the last successful renewal, so clock skew with the server
// cannot make it late. A 409 (lease_lost: lapsed, taken, stale fence) or 404
// ends the lease at once, and so does any other 4xx, since no retry of the
// same request can succeed.
//
// stop stops renewing, cancels the returned context, waits for an in-flight
// renewal to end, and returns the last error: nil when the last renewal
// succeeded (or none was due yet), an error wrapping ErrLeaseLost when the
// lease was lost, and otherwise the transient error of the last renewal (the
// lease may still be live until its expiry). stop may be called more than
// once and always returns the same error. Call it before completing, failing
// or releasing the node, so that no renewal races the end of the lease.
//
// The keeper renews; it does not extend. Renewing sets the expiry to now plus
// the lease's TTL, which is earlier than the expiry of a lease just extended
// past that: extend with a larger TTL by reclaiming, or stop the keeper.
func Keep(ctx context.Context, c *ClientWithResponses, nodeID string, lease Lease, opts ...KeepOption) (context.Context, func() error) {
	k := &keeper{
		c: c, nodeID: nodeID, fence: lease.Fence, session: lease.Session,
		backoffMin: 200 * time.Millisecond, backoffMax: 5 * time.Second,
		clock: clock.Real{},
	}
	for _, o := range opts {
		o(k)
	}
	now := k.clock.Now()
	ttl := time.Duration(lease.TTLMS) * time.Millisecond
	if ttl <= 0 {
		ttl = lease.ExpiresAt.Sub(now)
	}
	// The server's expires_at may be skewed against our clock; now + ttl
	// bounds it from above either way.
	deadline := now.Add(ttl)
	if !lease.ExpiresAt.IsZero() && lease.ExpiresAt.Before(deadline) {
		deadline = lease.ExpiresAt
	}

	kctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.run(kctx, cancel, ttl, deadline)
	}()
	var once sync.Once
	stop := func() error {
		once.Do(func() {
			cancel(nil)
			<-done
		})
		return k.lastErr
	}
	return kctx, stop
}

// keeper is the state of one Keep call; lastErr is written only by the run
// goroutine and read by stop after that goroutine has ended.
type keeper struct {
	c        *ClientWithResponses
	nodeID   string
	fence    int64
	session  *string
	interval time.Duration

	backoffMin, backoffMax time.Duration
	onRenew                func(RenewResponse)

	clock clock.Clock
	// armed, when set (by tests), is called each time the keeper starts to
	// wait, after its timer is armed: a signal to move a fake clock on.
	armed func(time.Duration)

	lastErr error
}

func (k *keeper) run(ctx context.Context, cancel context.CancelCauseFunc, ttl time.Duration, deadline time.Time) {
	if ttl <= 0 {
		k.lose(cancel, fmt.Errorf("%w: node %s: the lease had expired before it was kept", ErrLeaseLost, k.nodeID))
		return
	}
	backoff := k.backoffMin
	// Renew when a third of the TTL (or the interval) has passed since the
	// lease was last made good: at once for a lease that is already old.
	wait := max(0, deadline.Sub(k.clock.Now())-ttl+k.every(ttl))
	for {
		if !k.sleep(ctx, wait) {
			return
		}
		sent := k.clock.Now()
		res, err := k.renew(ctx, deadline.Sub(sent))
		if ctx.Err() != nil {
			return // stopped, or the parent ended, while renewing
		}
		if err == nil {
			k.lastErr = nil
			if res.Lease.TTLMS > 0 {
				ttl = time.Duration(res.Lease.TTLMS) * time.Millisecond
			}
			deadline = sent.Add(ttl)
			backoff, wait = k.backoffMin, k.every(ttl)
			if k.onRenew != nil {
				k.onRenew(*res)
			}
			continue
		}
		k.lastErr = err
		var retry retryable
		if !errors.As(err, &retry) {
			k.lose(cancel, fmt.Errorf("%w: node %s: %w", ErrLeaseLost, k.nodeID, err))
			return
		}
		now := k.clock.Now()
		if !now.Before(deadline) {
			k.lose(cancel, fmt.Errorf("%w: node %s: expired at %s without a successful renewal: %w",
				ErrLeaseLost, k.nodeID, deadline.UTC().Format(time.RFC3339Nano), retry.err))
			return
		}
		wait = min(max(jitter(backoff), retry.after), deadline.Sub(now))
		backoff = min(2*backoff, k.backoffMax)
	}
}

// every is how long after a renewal the next one is due.
func (k *keeper) every(ttl time.Duration) time.Duration {
	if k.interval > 0 && k.interval < ttl {
		return k.interval
	}
	return ttl / 3
}

func (k *keeper) lose(cancel context.CancelCauseFunc, cause error) {
	k.lastErr = cause
	cancel(cause)
}

// sleep waits d on the keeper's clock; false when ctx ended first.
func (k *keeper) sleep(ctx context.Context, d time.Duration) bool {
	fired := make(chan struct{})
	t := k.clock.AfterFunc(d, func() { close(fired) })
	defer t.Stop()
	if k.armed != nil {
		k.armed(d)
	}
	select {
	case <-fired:
		return true
	case <-ctx.Done():
		return false
	}
}

// retryable is a renewal error worth retrying; after is the server's
// Retry-After, when it sent one.
type retryable struct {
	err   error
	after time.Duration
}

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// renew sends one renewal, giving up at the lease's expiry as we reckon it
// (or after the least backoff, when that is later: the server's expiry is
// later than ours by the time the last renewal took to arrive).
func (k *keeper) renew(ctx context.Context, left time.Duration) (*RenewResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, max(left, k.backoffMin))
	defer cancel()
	fence := k.fence
	res, err := k.c.RenewLeaseWithResponse(ctx, k.nodeID, RenewRequest{Fence: &fence, Session: k.session})
	if err != nil {
		return nil, retryable{err: fmt.Errorf("error renewing: %w", err)}
	}
	if err := CheckResponse(res.HTTPResponse, res.Body); err != nil {
		switch status := res.StatusCode(); {
		case status == http.StatusTooManyRequests, status == http.StatusRequestTimeout, status >= 500:
			return nil, retryable{err: err, after: retryAfter(res.HTTPResponse, k.clock.Now())}
		default:
			return nil, err
		}
	}
	if res.JSON200 == nil {
		return nil, retryable{err: fmt.Errorf("error renewing: unexpected status %d", res.StatusCode())}
	}
	return res.JSON200, nil
}

// jitter spreads d over [d/2, d), so that a fleet of keepers that lost the
// server at the same moment do not come back at the same moment.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}
