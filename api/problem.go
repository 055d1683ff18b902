package api

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/fault"
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
	RequestID      string   `json:"request_id,omitempty"`
	retryAfter     int      // seconds, for 429
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
	CodeIdempotencyMismatch = "idempotency_mismatch"
	CodeRateLimited         = "rate_limited"
	CodeInternal            = "internal"
	CodeUnavailable         = "unavailable"
)

func newProblem(status int, code, detail string) *Problem {
	return &Problem{Type: "urn:tether:problem:" + code, Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
}

// problemFor translates any error into the problem the client sees. This is
// the only place domain errors become HTTP; internal error text never leaves.
func problemFor(err error) (*Problem, bool) {
	var (
		invalid      *fault.Invalid
		notFound     *fault.NotFound
		exists       *fault.AlreadyExists
		conflict     *fault.Conflict
		lost         *fault.LeaseLost
		notClaimable *fault.NotClaimable
		cycle        *fault.Cycle
		precond      *fault.PreconditionFailed
		forbidden    *fault.Forbidden
		unauth       *fault.Unauthorized
		limited      *fault.RateLimited
		tooLarge     *fault.TooLarge
		mismatch     *fault.IdempotencyMismatch
		maxBytes     *http.MaxBytesError
		httpErr      *echo.HTTPError
	)
	switch {
	case errors.As(err, &invalid):
		p := newProblem(http.StatusBadRequest, CodeBadRequest, invalid.Error())
		p.Field = invalid.Field
		return p, true
	case errors.As(err, &notFound):
		return newProblem(http.StatusNotFound, CodeNotFound, notFound.Error()), true
	case errors.As(err, &exists):
		return newProblem(http.StatusConflict, CodeAlreadyExists, exists.Error()), true
	case errors.As(err, &conflict):
		p := newProblem(http.StatusConflict, CodeConflict, conflict.Error())
		if conflict.Holder != "" {
			p.Holder, p.holderSet = &conflict.Holder, true
		}
		if !conflict.ExpiresAt.IsZero() {
			ms := conflict.ExpiresAt.UnixMilli()
			t := Time(conflict.ExpiresAt)
			p.Expires, p.ExpiresAt = &ms, &t
		}
		return p, true
	case errors.As(err, &lost):
		p := newProblem(http.StatusConflict, CodeLeaseLost, lost.Error())
		p.holderSet = true
		if lost.Holder != "" {
			p.Holder = &lost.Holder
		}
		return p, true
	case errors.As(err, &notClaimable):
		p := newProblem(http.StatusConflict, CodeNotClaimable, notClaimable.Error())
		p.Reason = notClaimable.Reason
		if notClaimable.Reason == fault.ReasonBlocked {
			p.BlockedBy = notClaimable.BlockedBy
		}
		if notClaimable.RunAt != nil {
			t := Time(*notClaimable.RunAt)
			p.RunAt = &t
		}
		return p, true
	case errors.As(err, &cycle):
		return newProblem(http.StatusConflict, CodeCycle, cycle.Error()), true
	case errors.As(err, &precond):
		p := newProblem(http.StatusPreconditionFailed, CodePreconditionFailed, precond.Error())
		v := precond.Current
		p.CurrentVersion = &v
		return p, true
	case errors.As(err, &forbidden):
		return newProblem(http.StatusForbidden, CodeForbidden, forbidden.Error()), true
	case errors.As(err, &unauth):
		return newProblem(http.StatusUnauthorized, CodeUnauthorized, unauth.Error()), true
	case errors.As(err, &limited):
		p := newProblem(http.StatusTooManyRequests, CodeRateLimited, limited.Error())
		p.retryAfter = max(1, int(math.Ceil(limited.RetryAfter.Seconds())))
		return p, true
	case errors.As(err, &mismatch):
		return newProblem(http.StatusUnprocessableEntity, CodeIdempotencyMismatch, mismatch.Error()), true
	case errors.As(err, &tooLarge):
		return newProblem(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, tooLarge.Error()), true
	case errors.As(err, &maxBytes):
		return newProblem(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, (&fault.TooLarge{Limit: maxBytes.Limit}).Error()), true
	case errors.Is(err, fault.ErrUnavailable):
		return newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the server cannot serve this request right now; retry"), true
	case errors.Is(err, context.Canceled):
		return newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the request was cancelled"), true
	case errors.As(err, &httpErr):
		return echoProblem(httpErr), true
	}
	return newProblem(http.StatusInternalServerError, CodeInternal, "an internal error occurred; it has been logged"), false
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
	b, err := json.Marshal(p)
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
