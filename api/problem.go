package api

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"syscall"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
)

// Problem is an RFC 9457 problem document. Code is what clients switch on.
type Problem struct {
	Type           string   `json:"type"`
	Title          string   `json:"title"`
	Status         int      `json:"status"`
	Code           string   `json:"code"`
	Detail         string   `json:"detail,omitempty"`
	Holder         *string  `json:"holder,omitempty"`
	holderSet      bool     // holder is emitted (possibly as null) when set
	Expires        *int64   `json:"expires,omitempty"`
	ExpiresAt      *Time    `json:"expires_at,omitempty"`
	Reason         string   `json:"reason,omitempty"`
	BlockedBy      []string `json:"blocked_by,omitempty"`
	RunAt          *Time    `json:"run_at,omitempty"`
	Field          string   `json:"field,omitempty"`
	CurrentVersion *int64   `json:"current_version,omitempty"`
	OldestSeq      *uint64  `json:"oldest_seq,omitempty"`
	Limit          *int64   `json:"limit,omitempty"`
	Key            string   `json:"key,omitempty"`
	Running        *int64   `json:"running,omitempty"`
	RetryAfterMS   *int64   `json:"retry_after_ms,omitempty"`
	WindowEnd      *Time    `json:"window_end,omitempty"`
	RequestID      string   `json:"request_id,omitempty"`
	retryAfter     int      // seconds, for 429 and disk_full
}

// MarshalJSON emits holder as null when the problem names "no holder".
func (p Problem) MarshalJSON() ([]byte, error) {
	type plain Problem
	b, err := json.Marshal(plain(p))
	if err != nil || !p.holderSet || p.Holder != nil {
		return b, err
	}
	return append(b[:len(b)-1], []byte(`,"holder":null}`)...), nil
}

// Problem codes.
const (
	CodeBadRequest          = "bad_request"
	CodeUnauthorized        = "unauthorized"
	CodeForbidden           = "forbidden"
	CodeNotFound            = "not_found"
	CodeConflict            = "conflict"
	CodeLeaseLost           = "lease_lost"
	CodeNotClaimable        = "not_claimable"
	CodeAlreadyExists       = "already_exists"
	CodeCycle               = "cycle"
	CodePreconditionFailed  = "precondition_failed"
	CodePayloadTooLarge     = "payload_too_large"
	CodeUnsupportedMedia    = "unsupported_media_type"
	CodeIdempotencyMismatch = "idempotency_mismatch"
	CodeRateLimited         = "rate_limited"
	CodeRangeNotSatisfiable = "range_not_satisfiable"
	CodeInternal            = "internal"
	CodeUnavailable         = "unavailable"
	CodeGone                = "gone"
	CodeDiskFull            = "disk_full"
)

func newProblem(status int, code, detail string) *Problem {
	return &Problem{Type: "urn:tether:problem:" + code, Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
}

// problemFor translates any error into the problem the client sees. This is
// the only place domain errors become HTTP; internal error text never leaves.
func problemFor(err error) (*Problem, bool) {
	known := knownError(err)
	switch e := known.(type) {
	case *fault.Invalid:
		p := newProblem(http.StatusBadRequest, CodeBadRequest, e.Error())
		p.Field = e.Field
		return p, true
	case *fault.NotFound:
		return newProblem(http.StatusNotFound, CodeNotFound, e.Error()), true
	case *fault.AlreadyExists:
		return newProblem(http.StatusConflict, CodeAlreadyExists, e.Error()), true
	case *fault.Conflict:
		p := newProblem(http.StatusConflict, CodeConflict, e.Error())
		if e.Holder != "" {
			p.Holder, p.holderSet = &e.Holder, true
		}
		if !e.ExpiresAt.IsZero() {
			ms := e.ExpiresAt.UnixMilli()
			t := Time(e.ExpiresAt)
			p.Expires, p.ExpiresAt = &ms, &t
		}
		return p, true
	case *fault.LeaseLost:
		p := newProblem(http.StatusConflict, CodeLeaseLost, e.Error())
		p.holderSet = true
		if e.Holder != "" {
			p.Holder = &e.Holder
		}
		return p, true
	case *fault.NotClaimable:
		p := newProblem(http.StatusConflict, CodeNotClaimable, e.Error())
		p.Reason = e.Reason
		if e.Reason == fault.ReasonBlocked {
			p.BlockedBy = e.BlockedBy
		}
		if e.RunAt != nil {
			t := Time(*e.RunAt)
			p.RunAt = &t
		}
		return p, true
	case *fault.Cycle:
		return newProblem(http.StatusConflict, CodeCycle, e.Error()), true
	case *fault.PreconditionFailed:
		p := newProblem(http.StatusPreconditionFailed, CodePreconditionFailed, e.Error())
		v := e.Current
		p.CurrentVersion = &v
		return p, true
	case *fault.Forbidden:
		return newProblem(http.StatusForbidden, CodeForbidden, e.Error()), true
	case *fault.Unauthorized:
		return newProblem(http.StatusUnauthorized, CodeUnauthorized, e.Error()), true
	case *fault.Throttled:
		p := newProblem(http.StatusConflict, e.Reason, e.Error())
		p.Key = e.Key
		if e.Reason == fault.ThrottleConcurrency {
			p.Limit, p.Running = &e.Limit, &e.Running
		}
		if e.RetryAfter > 0 {
			ms := retryAfterMS(e.RetryAfter)
			p.RetryAfterMS = &ms
			p.retryAfter = int((ms + 999) / 1000)
		}
		if !e.WindowEnd.IsZero() {
			t := Time(e.WindowEnd)
			p.WindowEnd = &t
		}
		return p, true
	case *fault.RateLimited:
		p := newProblem(http.StatusTooManyRequests, CodeRateLimited, e.Error())
		p.retryAfter = max(1, int(math.Ceil(e.RetryAfter.Seconds())))
		return p, true
	case *fault.IdempotencyMismatch:
		return newProblem(http.StatusUnprocessableEntity, CodeIdempotencyMismatch, e.Error()), true
	case *fault.TooLarge:
		p := newProblem(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, e.Error())
		p.Limit = &e.Limit
		return p, true
	case *fault.UnsupportedMediaType:
		return newProblem(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, e.Error()), true
	case *http.MaxBytesError:
		p := newProblem(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, (&fault.TooLarge{Limit: e.Limit}).Error())
		p.Limit = &e.Limit
		return p, true
	case *fault.Gone:
		p := newProblem(http.StatusGone, CodeGone, e.Error())
		oldest := e.OldestSeq
		p.OldestSeq = &oldest
		return p, true
	case *fault.DiskFull:
		// 503, not 507: the condition passes without the client doing
		// anything, and clients already back off and retry on 503.
		p := newProblem(http.StatusServiceUnavailable, CodeDiskFull, e.Error())
		p.retryAfter = diskFullRetryAfter
		return p, true
	case *echo.HTTPError:
		return echoProblem(e), true
	}
	if known == nil && errors.Is(err, syscall.ENOSPC) {
		// A write of a file of its own (a blob) that found the disk full.
		return problemFor(&fault.DiskFull{})
	}
	switch known {
	case fault.ErrUnavailable:
		return newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the server cannot serve this request right now; retry"), true
	case context.Canceled:
		return newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the request was cancelled"), true
	case context.DeadlineExceeded:
		// A store that did not answer in time (an etcd cut off, say): the
		// request may be retried, as any 503 that says so.
		return newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the store did not answer in time; retry"), true
	}
	return newProblem(http.StatusInternalServerError, CodeInternal, "an internal error occurred; it has been logged"), false
}

// diskFullRetryAfter is the Retry-After of a disk_full answer, in seconds:
// space comes back when an operator frees it, not in a moment.
const diskFullRetryAfter = 5

// knownError finds, in err's tree of wrapped errors, the error that decides
// the problem: the one of the kind ranked first by errorRank, and of those the
// first that errors.As would find. It is errors.As and errors.Is for every
// kind at once, in one walk and without allocating (a target per kind for
// errors.As would cost an allocation each, on every error answer). None of
// these kinds has an As or Is method, so matching on the type is all
// errors.As would do.
func knownError(err error) error {
	_, e := rankedError(err)
	return e
}

// rankedError walks err's tree depth first, as errors.As does, and returns
// the first error of the lowest rank in it.
func rankedError(err error) (rank int, best error) {
	rank = noKind
	for err != nil {
		if r := errorRank(err); r < rank {
			rank, best = r, err
		}
		switch w := err.(type) {
		case interface{ Unwrap() error }:
			err = w.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range w.Unwrap() {
				if r, b := rankedError(e); r < rank {
					rank, best = r, b
				}
			}
			return rank, best
		default:
			return rank, best
		}
	}
	return rank, best
}

// noKind is the rank of an error of no known kind: an internal error.
const noKind = 1 << 10

// errorRank orders the error kinds: when one error wraps several kinds, the
// lowest rank decides which problem it is.
func errorRank(err error) int {
	switch err.(type) {
	case *fault.Invalid:
		return 0
	case *fault.NotFound:
		return 1
	case *fault.AlreadyExists:
		return 2
	case *fault.Conflict:
		return 3
	case *fault.LeaseLost:
		return 4
	case *fault.NotClaimable:
		return 5
	case *fault.Cycle:
		return 6
	case *fault.PreconditionFailed:
		return 7
	case *fault.Forbidden:
		return 8
	case *fault.Unauthorized:
		return 9
	case *fault.RateLimited:
		return 10
	case *fault.Throttled:
		return 20
	case *fault.IdempotencyMismatch:
		return 11
	case *fault.TooLarge:
		return 12
	case *http.MaxBytesError:
		return 13
	case *echo.HTTPError:
		return 16
	case *fault.Gone:
		return 17
	case *fault.UnsupportedMediaType:
		return 18
	case *fault.DiskFull:
		return 19
	}
	switch err {
	case fault.ErrUnavailable:
		return 14
	case context.Canceled:
		return 15
	case context.DeadlineExceeded:
		return 20
	}
	return noKind
}

// echoProblem maps Echo's own errors (unknown route, wrong method).
func echoProblem(e *echo.HTTPError) *Problem {
	msg, _ := e.Message.(string)
	switch e.Code {
	case http.StatusNotFound:
		return newProblem(http.StatusNotFound, CodeNotFound, "no such endpoint")
	case http.StatusMethodNotAllowed:
		return newProblem(http.StatusMethodNotAllowed, CodeBadRequest, "method not allowed on this endpoint")
	case http.StatusRequestEntityTooLarge:
		return newProblem(e.Code, CodePayloadTooLarge, msg)
	case http.StatusUnauthorized:
		return newProblem(e.Code, CodeUnauthorized, msg)
	}
	if e.Code >= 500 {
		return newProblem(http.StatusInternalServerError, CodeInternal, "an internal error occurred; it has been logged")
	}
	return newProblem(http.StatusBadRequest, CodeBadRequest, msg)
}

// errorHandler is Echo's HTTPErrorHandler: every error leaves as problem+json.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	p, known := problemFor(err)
	p.RequestID = c.Response().Header().Get(echo.HeaderXRequestID)
	if !known {
		s.log.Error("internal error", "err", err, "method", c.Request().Method, "path", c.Path(), "request_id", p.RequestID)
	}
	if p.retryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	writeProblem(c, p)
}

func writeProblem(c echo.Context, p *Problem) {
	// MarshalJSON directly: json.Marshal would check and copy its output again.
	b, err := p.MarshalJSON()
	if err != nil {
		b = []byte(`{"type":"urn:tether:problem:internal","title":"Internal Server Error","status":500,"code":"internal"}`)
		p.Status = http.StatusInternalServerError
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(p.Status)
		return
	}
	_ = c.Blob(p.Status, "application/problem+json", b)
}
