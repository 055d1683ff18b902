package runner

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/tether-run/tether/client"
)

// Handler runs one claimed node. Its result (nil error) completes the node;
// an error fails it with the error's text. Its context ends when the run
// must stop (see the package's invariants); it must return soon after.
type Handler interface {
	Work(ctx context.Context, job *Job) (result any, err error)
}

// HandlerFunc is a function as a Handler.
type HandlerFunc func(ctx context.Context, job *Job) (any, error)

// Work calls f.
func (f HandlerFunc) Work(ctx context.Context, job *Job) (any, error) { return f(ctx, job) }

// Shrinker is a result that can be made smaller: when the server refuses a
// completion as too large (payload_too_large), the runner completes with
// Shrink's result instead, until ok is false.
type Shrinker interface {
	Shrink() (smaller any, ok bool)
}

// valuer is a result that is sent as the value it gives (the Exec
// handler's output, which remembers all it needs to shrink).
type valuer interface{ value() any }

// resultValue is what a completion sends for result.
func resultValue(result any) any {
	if v, ok := result.(valuer); ok {
		return v.value()
	}
	return result
}

// Job is one claimed node, as its handler sees it.
type Job struct {
	// Node is the node as the claim returned it (status running), and
	// NodeJSON the same as the server sent it.
	Node     client.Node
	NodeJSON json.RawMessage
	// Lease is the claim: the node's id, the fence every report carries,
	// the TTL the server granted.
	Lease client.Lease
	// Worker is the name of the slot running the job.
	Worker string
	// Server and Token are the runner's; Client calls that server as the
	// runner's identity.
	Server, Token string
	Client        *client.ClientWithResponses
	// InboxPath is the JSON Lines file the node's messages are appended to
	// while it runs (Config.Inbox); "" without one.
	InboxPath string
	// Log is the runner's logger with the slot, node and fence.
	Log *slog.Logger

	inbox *inbox
}

// OnMessages sets f to be called after each batch of messages is appended
// to InboxPath (from another goroutine); a job without an inbox never calls
// it.
func (j *Job) OnMessages(f func()) {
	if j.inbox != nil {
		j.inbox.onMessages(f)
	}
}
