package linearize

import (
	"fmt"
	"time"
)

// Kind names what an operation does.
type Kind uint8

// The operations the model knows. Restart is not a client call: it stands
// for a kill -9 and the restart that followed, as the server's Start sees
// the node.
const (
	Claim Kind = iota + 1
	Renew
	Release
	Complete
	Read
	Restart
)

func (k Kind) String() string {
	switch k {
	case Claim:
		return "claim"
	case Renew:
		return "renew"
	case Release:
		return "release"
	case Complete:
		return "complete"
	case Read:
		return "read"
	case Restart:
		return "restart"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Input is one call as it was sent.
type Input struct {
	Kind   Kind   `json:"kind"`
	Node   string `json:"node"`
	Client string `json:"client,omitempty"` // the caller's identity (token subject)
	// Fence is the fence sent with a renew, release or complete; 0 sends none
	// (the server then checks only the identity).
	Fence uint64 `json:"fence,omitempty"`
	// TTL is the lease TTL a claim asked for.
	TTL time.Duration `json:"ttl,omitempty"`
	// Call and Return bound, in Unix nanoseconds of the machine's clock, the
	// instant the server may have acted. The recorder fills them from the
	// operation's own times (for an unknown outcome, Return is when the
	// server was known dead), so the model can tell whether a lease had
	// expired.
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
}

// Result is how the server answered.
type Result uint8

// The answers. Unknown means no answer came (a connection error, a
// timeout, a server killed mid-request): the call may or may not have taken
// effect.
const (
	OK           Result = iota + 1
	Conflict            // 409 conflict: a live lease held by another identity
	LeaseLost           // 409 lease_lost: no live lease of the caller, or a stale fence
	NotClaimable        // 409 not_claimable
	Unknown
)

func (r Result) String() string {
	switch r {
	case OK:
		return "ok"
	case Conflict:
		return "conflict"
	case LeaseLost:
		return "lease_lost"
	case NotClaimable:
		return "not_claimable"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("result(%d)", uint8(r))
}

// Output is what the server answered, reduced to what the model checks. The
// model compares it whole, so each answer fills exactly these fields: a
// granted claim Status, Holder, Fence, Renewed, Attempts and Expires; a renew
// Holder, Fence and Expires; a release or a complete Status; a read Status,
// Holder, Fence, Attempts and, when it shows a lease, Expires; a conflict or
// a lease_lost Holder; not_claimable and unknown nothing.
type Output struct {
	Result Result `json:"result"`
	// Status is the node status in the answer: a claim's, a release's, a
	// complete's, a read's.
	Status string `json:"status,omitempty"`
	// Holder is the lease holder the answer names: lease.by of a claim, a
	// renew or a read; the problem's holder member of a conflict or a
	// lease_lost ("" when none).
	Holder string `json:"holder,omitempty"`
	// Fence is the lease's fence in a claim, a renew or a read (0: no lease).
	Fence uint64 `json:"fence,omitempty"`
	// Renewed is a claim's renewed flag.
	Renewed bool `json:"renewed,omitempty"`
	// Attempts is the node's attempts in a claim or a read.
	Attempts int64 `json:"attempts,omitempty"`
	// Expires is the lease's expiry in a claim, a renew or a read that shows
	// a lease: lease.expires, Unix milliseconds (0: no lease).
	Expires int64 `json:"expires,omitempty"`
}

func describe(in Input, out Output) string {
	s := in.Kind.String() + "(" + in.Node
	if in.Client != "" {
		s += " by " + in.Client
	}
	if in.Fence != 0 {
		s += fmt.Sprintf(" fence %d", in.Fence)
	}
	if in.TTL != 0 {
		s += " ttl " + in.TTL.String()
	}
	s += ") -> " + out.Result.String()
	switch {
	case out.Result == OK && in.Kind == Read:
		s += fmt.Sprintf(" %s holder=%q fence=%d attempts=%d", out.Status, out.Holder, out.Fence, out.Attempts)
		if out.Expires != 0 {
			s += " expires=" + stampMS(out.Expires)
		}
	case out.Result == OK && in.Kind == Claim:
		s += fmt.Sprintf(" fence=%d renewed=%v attempts=%d expires=%s", out.Fence, out.Renewed, out.Attempts, stampMS(out.Expires))
	case out.Result == OK && in.Kind == Renew:
		s += fmt.Sprintf(" fence=%d expires=%s", out.Fence, stampMS(out.Expires))
	case out.Result == OK:
		s += " " + out.Status
	case out.Result == Conflict || out.Result == LeaseLost:
		s += fmt.Sprintf(" holder=%q", out.Holder)
	}
	return s
}

// stampMS shows a Unix ms instant as its second of the minute, to the ms
// (":08.380"): enough to compare the expiries of one node's history, which
// spans seconds.
func stampMS(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(":05.000")
}
