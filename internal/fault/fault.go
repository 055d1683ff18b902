package fault

import (
	"errors"
	"fmt"
	"time"
)

// Invalid is a request value that breaks a rule. Field names the offending
// input where there is one.
type Invalid struct {
	Field  string
	Reason string
}

func (e *Invalid) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Invalidf builds an Invalid for field with a formatted reason.
func Invalidf(field, format string, args ...any) error {
	return &Invalid{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// NotFound is a thing that does not exist in the caller's tenant.
type NotFound struct {
	What string // "node", "edge", "token", ...
	ID   string
}

func (e *NotFound) Error() string { return fmt.Sprintf("%s %q not found", e.What, e.ID) }

// AlreadyExists is an id that is taken.
type AlreadyExists struct {
	What string
	ID   string
}

func (e *AlreadyExists) Error() string { return fmt.Sprintf("%s %q already exists", e.What, e.ID) }

// Conflict is a live lease held by another identity, or a state that forbids
// the action (Holder empty then).
type Conflict struct {
	Reason    string
	Holder    string
	ExpiresAt time.Time
}

func (e *Conflict) Error() string {
	if e.Holder != "" {
		return fmt.Sprintf("%s: held by %q until %s", e.Reason, e.Holder, e.ExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")) // the API's precision
	}
	return e.Reason
}

// LeaseLost is a caller whose lease lapsed, was taken, or whose fence is stale.
// Holder is the current holder, empty when nobody holds the node.
type LeaseLost struct {
	Reason string
	Holder string
}

func (e *LeaseLost) Error() string { return "lease lost: " + e.Reason }

// Not-claimable reasons.
const (
	ReasonTerminal = "terminal"
	ReasonBlocked  = "blocked"
	ReasonDelayed  = "delayed"
)

// NotClaimable is a node that is terminal or not ready.
type NotClaimable struct {
	Reason    string // ReasonTerminal, ReasonBlocked or ReasonDelayed
	Status    string
	BlockedBy []string
	RunAt     *time.Time
	Detail    string // more words on the reason, when there are any
}

func (e *NotClaimable) Error() string {
	if e.Detail != "" {
		return "node is not claimable: " + e.Reason + ": " + e.Detail
	}
	return "node is not claimable: " + e.Reason
}

// Cycle is an edge that would close a cycle of depends_on or parent_of.
type Cycle struct {
	From, Type, To string
}

func (e *Cycle) Error() string {
	return fmt.Sprintf("edge %s -[%s]-> %s would close a cycle", e.From, e.Type, e.To)
}

// PreconditionFailed is an If-Match that does not match the current version.
type PreconditionFailed struct {
	Current int64
}

func (e *PreconditionFailed) Error() string {
	return fmt.Sprintf("version does not match: current version is %d", e.Current)
}

// Forbidden is an authenticated caller whose role does not allow the action.
type Forbidden struct {
	Reason string
}

func (e *Forbidden) Error() string { return e.Reason }

// Unauthorized is missing, malformed, expired or unverifiable credentials.
type Unauthorized struct {
	Reason string
}

func (e *Unauthorized) Error() string { return e.Reason }

// RateLimited is a caller over a per-tenant limit.
type RateLimited struct {
	Reason     string
	RetryAfter time.Duration
}

func (e *RateLimited) Error() string { return e.Reason }

// Gone is a cursor behind what retention kept: events after it were
// removed, so reading on from it would skip them.
type Gone struct {
	After     uint64 // the cursor asked for
	OldestSeq uint64 // the oldest event seq that may still be read
}

func (e *Gone) Error() string {
	return fmt.Sprintf("events after seq %d were removed by retention; the oldest still kept is after seq %d (start again from there, or from the beginning without after)", e.After, e.OldestSeq-1)
}

// TooLarge is a body or blob over its limit, or a blob that would take its
// tenant over its quota. Limit is the number in bytes.
type TooLarge struct {
	Limit int64
	// Reason, when set, says which limit (a quota) instead of the default.
	Reason string
}

func (e *TooLarge) Error() string {
	if e.Reason != "" {
		return e.Reason
	}
	return fmt.Sprintf("payload exceeds the limit of %d bytes", e.Limit)
}

// UnsupportedMediaType is a request body in a media type the endpoint does
// not take. Got is the Content-Type sent.
type UnsupportedMediaType struct {
	Got string
}

func (e *UnsupportedMediaType) Error() string {
	return fmt.Sprintf("this endpoint takes a JSON body (Content-Type: application/json), not %q", e.Got)
}

// IdempotencyMismatch is an Idempotency-Key reused with a different request.
type IdempotencyMismatch struct {
	Key string
}

func (e *IdempotencyMismatch) Error() string {
	return fmt.Sprintf("Idempotency-Key %q was used with a different request within the last 24 hours", e.Key)
}

// ErrUnavailable is a server that cannot serve right now (closing, store down).
var ErrUnavailable = errors.New("service unavailable")

// DiskFull is a write refused because the disk that holds the server's data
// directory is (nearly) full. It is no fault of the request: the server
// takes writes again by itself once space is freed there, without a
// restart. Renewal says whether lease renewals are refused too (the disk
// is past the reserve they may use).
type DiskFull struct {
	Renewal bool
}

func (e *DiskFull) Error() string {
	what := "writes are"
	if e.Renewal {
		what = "writes, lease renewals included, are"
	}
	return "the disk that holds the server's data directory (TETHER_DATA_DIR) is full: " + what +
		" refused until an operator frees space on it; they are taken again, without a restart, once there is; retry later"
}

// The reasons flow control refuses a claim (Throttled.Reason).
const (
	ThrottleConcurrency = "concurrency_limited"
	ThrottleRate        = "start_rate_limited"
	ThrottleBudget      = "budget_exhausted"
)

// Throttled is a claim refused by flow control: a concurrency key at its
// limit (Limit, Running), a start rate without a token, or a spent usage
// budget (WindowEnd). Key names the concurrency key, or the queue for a
// queue's rate. RetryAfter is 0 when no instant is known at which a retry
// succeeds (a concurrency limit frees when a run ends).
type Throttled struct {
	Reason     string
	Key        string
	Limit      int64
	Running    int64
	RetryAfter time.Duration
	WindowEnd  time.Time
}

func (e *Throttled) Error() string {
	switch e.Reason {
	case ThrottleConcurrency:
		return fmt.Sprintf("concurrency key %q is at its limit of %d running", e.Key, e.Limit)
	case ThrottleBudget:
		return fmt.Sprintf("the usage budget of concurrency key %q is spent until %s", e.Key, e.WindowEnd.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("the start rate of %q has no token for another %d ms", e.Key, e.RetryAfter.Milliseconds())
}
