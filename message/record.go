package message

import (
	"regexp"
	"strings"
	"time"

	"github.com/tether-run/tether/graph"
)

// State is where a message is, derived from its record and the clock.
type State string

// The states of a message.
const (
	// StatePending is a message no recipient has listed yet.
	StatePending State = "pending"
	// StateDelivered is a message a recipient's inbox has listed.
	StateDelivered State = "delivered"
	// StateRead is a message a recipient acknowledged.
	StateRead State = "read"
	// StateExpired is a message whose ttl passed before it was read.
	StateExpired State = "expired"
)

// States lists every state.
func States() []State { return []State{StatePending, StateDelivered, StateRead, StateExpired} }

// NodePrefix starts the address of a message to a node. No identity may
// start with it (graph.SubjectProblem), so an address means one thing.
const NodePrefix = graph.NodeAddressPrefix

// Limits of a message.
const (
	// MaxBody bounds a body, in characters.
	MaxBody = 65536
	// MaxPriority bounds a priority either way (-MaxPriority..MaxPriority).
	MaxPriority = 1_000_000
	// MaxTTL bounds ttl_ms.
	MaxTTL = 30 * 24 * time.Hour
	// Retention is how long a message is kept once read or expired.
	Retention = 7 * 24 * time.Hour
	// DefaultLimit and MaxLimit bound a page of an inbox.
	DefaultLimit = 100
	MaxLimit     = 1000
)

var threadPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// ValidThread reports whether t may name a thread: 1-128 characters of
// [A-Za-z0-9._:-] starting with a letter or digit.
func ValidThread(t string) bool { return threadPattern.MatchString(t) }

// Record is a message as stored.
type Record struct {
	ID          string     `json:"id"`
	From        string     `json:"from"`
	To          string     `json:"to"` // "<sub>" or "node:<id>"
	Body        string     `json:"body"`
	Priority    int64      `json:"priority"`
	Thread      string     `json:"thread,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
	DeliveredTo string     `json:"delivered_to,omitempty"`
	ReadAt      *time.Time `json:"read_at,omitempty"`
	ReadBy      string     `json:"read_by,omitempty"`
}

// Node is the id of the node the message is addressed to ("" for an
// identity).
func (r *Record) Node() string {
	if id, ok := r.toNode(); ok {
		return id
	}
	return ""
}

// toNode returns the id of the node the message is addressed to, and
// whether it is addressed to a node at all (false: id is meaningless). The prefix decides: Send has
// always taken "node:<id>" for a node, so every record, old or new, means
// the same by its "to".
func (r *Record) toNode() (id string, ok bool) {
	return strings.CutPrefix(r.To, NodePrefix)
}

// box is the recipient whose inbox lists the message: its node's, or its
// identity's, never both.
func (r *Record) box(tenant string) boxKey {
	if id, ok := r.toNode(); ok {
		return nodeBox(tenant, id)
	}
	return identityBox(tenant, r.To)
}

// expired reports whether the message's ttl passed unread at now.
func (r *Record) expired(now time.Time) bool {
	return r.ReadAt == nil && r.ExpiresAt != nil && !now.Before(*r.ExpiresAt)
}

// StateAt is the message's state at now.
func (r *Record) StateAt(now time.Time) State {
	switch {
	case r.ReadAt != nil:
		return StateRead
	case r.expired(now):
		return StateExpired
	case r.DeliveredAt != nil:
		return StateDelivered
	}
	return StatePending
}

// keepFor is the Badger TTL of the record at now: Retention past its read
// or expiry, none while it may still be read.
func (r *Record) keepFor(now time.Time) time.Duration {
	switch {
	case r.ReadAt != nil:
		return r.ReadAt.Add(Retention).Sub(now)
	case r.ExpiresAt != nil:
		return r.ExpiresAt.Add(Retention).Sub(now)
	}
	return 0
}

// forgetAt is when the index lets the message go: Retention after it was
// read, at its expiry while unread; zero for never.
func (r *Record) forgetAt() time.Time {
	switch {
	case r.ReadAt != nil:
		return r.ReadAt.Add(Retention)
	case r.ExpiresAt != nil:
		return *r.ExpiresAt
	}
	return time.Time{}
}

// parseTo checks a recipient address and returns the node id it names ("" for
// an identity), or why it is no address.
func parseTo(to string) (node, problem string) {
	if id, isNode := strings.CutPrefix(to, NodePrefix); isNode {
		if !graph.ValidID(id) {
			return "", `must be an identity ("<sub>") or "node:<id>" with a valid node id`
		}
		return id, ""
	}
	if p := graph.SubjectProblem(to); p != "" {
		return "", `must be an identity ("<sub>") or "node:<id>": an identity ` + p
	}
	return "", ""
}
