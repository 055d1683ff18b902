package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"
)

// The defaults of RetryPolicy: four tries in all, the waits between them
// drawn from 100-200 ms, 200-400 ms and 400-800 ms, or the server's
// Retry-After (at most 5 s) when longer.
const (
	DefaultRetryMaxAttempts = 4
	DefaultRetryBaseDelay   = 200 * time.Millisecond
	DefaultRetryMaxDelay    = 5 * time.Second
)

// RetryPolicy says how often the client sends a call again that failed for
// a reason that may pass, and how long it waits between tries. Which calls
// it sends again is fixed (retry_ops.go; the table is docs/retries.md): every
// call answered 429 or that could not connect, and, when the call is safe
// to repeat (reads, renewals, claims of a node by id, fenced releases,
// heartbeats, acknowledgements, and creates and claim-nexts, which the
// client gives an Idempotency-Key), one answered 503 or that lost its
// connection.
//
// The zero value is the default policy.
type RetryPolicy struct {
	// MaxAttempts is the most tries of one call, the first included:
	// 0 is DefaultRetryMaxAttempts, 1 turns retries off.
	MaxAttempts int
	// BaseDelay is the wait before the first retry; each later wait
	// doubles, up to MaxDelay, and is drawn at random from its upper half
	// (0: DefaultRetryBaseDelay).
	BaseDelay time.Duration
	// MaxDelay caps every wait, the server's Retry-After included
	// (0: DefaultRetryMaxDelay).
	MaxDelay time.Duration
}

// WithRetries sets the client's retry policy (the default is on:
// RetryPolicy{}).
func WithRetries(p RetryPolicy) ClientOption {
	return func(c *Client) error {
		if p.MaxAttempts < 0 || p.BaseDelay < 0 || p.MaxDelay < 0 {
			return errors.New("client: a RetryPolicy's fields must not be negative")
		}
		c.retry = p
		return nil
	}
}

// WithoutRetries turns retries off: every answer and error of the first
// try reaches the caller, and creates and claims are sent without an
// Idempotency-Key unless the caller gives one.
func WithoutRetries() ClientOption { return WithRetries(RetryPolicy{MaxAttempts: 1}) }

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultRetryMaxAttempts
	}
	if p.BaseDelay == 0 {
		p.BaseDelay = DefaultRetryBaseDelay
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = max(DefaultRetryMaxDelay, p.BaseDelay)
	}
	return p
}

// retrying wraps the client's doer in the retry policy; with retries off it
// is the doer itself.
func retrying(next HttpRequestDoer, server string, p RetryPolicy) HttpRequestDoer {
	p = p.withDefaults()
	if p.MaxAttempts <= 1 {
		return next
	}
	return &retryDoer{next: next, base: basePath(server), policy: p}
}

// retryDoer sends a request again while its answer is one that may pass and
// the request is safe to repeat, at most policy.MaxAttempts times in all.
type retryDoer struct {
	next   HttpRequestDoer
	base   string // the escaped path of the server URL, without its trailing slash
	policy RetryPolicy
}

func (d *retryDoer) Do(req *http.Request) (*http.Response, error) {
	op := classify(req, d.base)
	if op == opKeyed && req.Header.Get("Idempotency-Key") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Idempotency-Key", newIdempotencyKey())
	}
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	if op == opFencedRelease {
		op = releaseKind(req)
	}
	ctx := req.Context()
	backoff := d.policy.BaseDelay
	for attempt := 1; ; attempt++ {
		resp, err := d.next.Do(req)
		if attempt >= d.policy.MaxAttempts || !replayable || ctx.Err() != nil || !worthRetrying(op, resp, err) {
			return resp, err
		}
		wait := max(backoff/2+mrand.N(backoff/2+1), min(retryAfter(resp, time.Now()), d.policy.MaxDelay))
		backoff = min(2*backoff, d.policy.MaxDelay)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
			return resp, err // the caller could not wait for the next answer
		}
		if resp != nil {
			// Drain a little, so that the connection can serve the retry.
			_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
			_ = resp.Body.Close()
		}
		if !sleepCtx(ctx, wait) {
			return nil, fmt.Errorf("error retrying %s %s after %d tries: %w", req.Method, req.URL.Path, attempt, context.Cause(ctx))
		}
		if req, err = rewound(req); err != nil {
			return nil, err
		}
	}
}

// worthRetrying reports whether a try that ended with resp or err may be sent
// again: a 429 (the server refused before acting) or a connection never made
// always; a 503 or a connection lost during the call only when op is safe to
// repeat, since the server may have acted on it.
func worthRetrying(op opKind, resp *http.Response, err error) bool {
	if err != nil {
		return notSent(err) || op.repeatable()
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable:
		return op.repeatable()
	}
	return false
}

// notSent reports whether err surely came before the request reached the
// server: no connection could be made.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// rewound is req with a fresh copy of its body, for the next try.
func rewound(req *http.Request) (*http.Request, error) {
	if req.GetBody == nil {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("error rewinding the request body for a retry: %w", err)
	}
	r := req.Clone(req.Context())
	r.Body = body
	return r, nil
}

// retryAfter is the wait a response asks for: its Tether-Retry-After-Ms,
// else its Retry-After (delta seconds or an HTTP date, reckoned from now);
// 0 without either.
func retryAfter(resp *http.Response, now time.Time) time.Duration {
	if resp == nil {
		return 0
	}
	if d, ok := retryAfterMs(resp); ok {
		return d
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(secs, 0)) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0)
	}
	return 0
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// newIdempotencyKey is a random key for one create or claim and its retries.
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "tether-go-" + hex.EncodeToString(b[:])
}
