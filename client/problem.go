package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"time"
)

// Problem is an RFC 9457 problem document, the body of every Tether error
// (Content-Type application/problem+json). Code is stable and is what callers
// switch on; the other extension members are set only for the codes that name
// them. The generated responses decode their error bodies into it
// (ApplicationProblemJSON409 and so on).
type Problem struct {
	Type   string      `json:"type"`
	Title  string      `json:"title"`
	Status int         `json:"status"`
	Code   ProblemCode `json:"code"`
	Detail string      `json:"detail,omitempty"`

	// Holder is the current lease holder (conflict, lease_lost); nil when
	// nobody holds the node or the member is absent.
	Holder *string `json:"holder,omitempty"`
	// Expires and ExpiresAt are the holder's lease expiry (conflict), as Unix
	// epoch milliseconds and as a time.
	Expires   *int64     `json:"expires,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Reason is why a node is not claimable: terminal, blocked or delayed.
	Reason string `json:"reason,omitempty"`
	// BlockedBy are the ids keeping a node from being ready (reason blocked).
	BlockedBy []string `json:"blocked_by,omitempty"`
	// RunAt is when a delayed node becomes claimable (reason delayed).
	RunAt *time.Time `json:"run_at,omitempty"`
	// Field names the offending input of a bad_request, where there is one.
	Field string `json:"field,omitempty"`
	// CurrentVersion is the node's version on precondition_failed.
	CurrentVersion *int64 `json:"current_version,omitempty"`
	// OldestSeq is, on gone, the oldest event seq still kept.
	OldestSeq *int64 `json:"oldest_seq,omitempty"`
	// Limit is the limit crossed, in bytes, on payload_too_large: the body
	// limit, the largest blob, or the tenant's blob quota; on
	// concurrency_limited, the key's limit on live leases.
	Limit *int64 `json:"limit,omitempty"`
	// Key is the concurrency key (or queue, for a queue's start rate) that
	// refused a claim: concurrency_limited, start_rate_limited,
	// budget_exhausted.
	Key string `json:"key,omitempty"`
	// Running is the key's live leases on concurrency_limited.
	Running *int64 `json:"running,omitempty"`
	// RetryAfterMS is how long until a retry can succeed, in milliseconds
	// (start_rate_limited, budget_exhausted).
	RetryAfterMS *int64 `json:"retry_after_ms,omitempty"`
	// WindowEnd is when a spent budget's window rolls over (budget_exhausted).
	WindowEnd *time.Time `json:"window_end,omitempty"`
	// RequestID identifies the request in the server's logs.
	RequestID string `json:"request_id,omitempty"`
}

// Error reads like "409 lease_lost: lease lost: fence is stale".
func (p *Problem) Error() string {
	msg := p.Detail
	if msg == "" {
		msg = p.Title
	}
	return fmt.Sprintf("%d %s: %s", p.Status, p.Code, msg)
}

// ProblemFrom returns the problem document in an HTTP response, or nil unless
// the response is application/problem+json. body is the response body, already
// read (the generated responses keep it in Body). A body that does not decode
// still yields a Problem with the response's status.
func ProblemFrom(resp *http.Response, body []byte) *Problem {
	if resp == nil {
		return nil
	}
	mediaType, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/problem+json" {
		return nil
	}
	var p Problem
	if err := json.Unmarshal(body, &p); err != nil {
		return &Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
	}
	if p.Status == 0 {
		p.Status = resp.StatusCode
	}
	return &p
}

// IsCode reports whether err is, or wraps, a *Problem with the given code.
// code may be a ProblemCode constant or a plain string: IsCode(err, "lease_lost").
func IsCode(err error, code ProblemCode) bool {
	var p *Problem
	return errors.As(err, &p) && p.Code == code
}

// CheckResponse returns nil for a response below 400 and an error otherwise:
// the response's *Problem, or one made from the status when the body is not a
// problem document (a proxy's error page, say). Unlike ProblemFrom its result
// can be returned as an error directly, without the nil *Problem trap.
func CheckResponse(resp *http.Response, body []byte) error {
	if resp == nil {
		return errors.New("no response")
	}
	if resp.StatusCode < 400 {
		return nil
	}
	if p := ProblemFrom(resp, body); p != nil {
		return p
	}
	return &Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Detail: "the response is not a problem document"}
}
