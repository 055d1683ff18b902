package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tether-run/tether/client"
)

// Config is what a runner does and how. The zero value of an optional field
// is its default.
type Config struct {
	// Server is the Tether server's base URL, like http://127.0.0.1:36725.
	Server string
	// Token is the bearer token of a worker identity (a JWT or an API key).
	Token string
	// HTTPClient makes the calls; nil for one with a connection pool sized
	// for Slots.
	HTTPClient *http.Client

	// Queue is the queue nodes are claimed from.
	Queue string
	// Types and Labels narrow the claims: only nodes of one of Types, and
	// only nodes carrying all of Labels.
	Types, Labels []string

	// Handler runs each claimed node.
	Handler Handler
	// Slots is how many handlers run at once (default 1, at most 1000).
	Slots int
	// TTL is the lease TTL asked for each claim (default 5 minutes, at
	// least 1 s); the server may cap it.
	TTL time.Duration
	// RenewEvery is how often a running handler's lease is renewed
	// (default, and whenever it is not below the granted TTL, a third of
	// that TTL). Failed renewals are retried as client.Keep does.
	RenewEvery time.Duration
	// Grace is how long running handlers may go on once the runner stops
	// before their contexts are cancelled; 0 cancels them at once.
	Grace time.Duration

	// WorkerName names the slots NAME-1, NAME-2, ... in GET /v1/workers
	// (default DefaultWorkerName()).
	WorkerName string
	// Heartbeat is how often each slot reports itself when nothing changes
	// (default 30 s, at least 1 s).
	Heartbeat time.Duration
	// Meta is added to the host, pid and queue every heartbeat carries.
	Meta map[string]any

	// Inbox delivers the messages sent to a running node to a JSON Lines
	// file, Job.InboxPath, and acknowledges each once it is there.
	Inbox bool

	// Backoff spaces the retries of a claim, a report or an inbox read that
	// failed for a reason that may pass (no answer, a 5xx, a 429).
	Backoff Backoff

	// Retries is the client's policy for sending one call again by itself
	// when that is safe (see client.RetryPolicy); the zero value is the
	// client's default, MaxAttempts 1 turns it off. A call that still fails
	// is then retried by the runner as Backoff says.
	Retries client.RetryPolicy

	// Tracer, when set, makes each run a span of its own trace, linked to
	// the request that created its node; the handler's context carries it.
	Tracer trace.Tracer
	// Logger gets the runner's log lines (default slog.Default()).
	Logger *slog.Logger
}

// Backoff is an exponential backoff with jitter: each delay doubles from
// Min up to Max and is drawn from its upper half, so that a fleet that lost
// the server at once does not come back at once.
type Backoff struct {
	Min, Max time.Duration // default 100 ms and 10 s
}

// Defaults of Config.
const (
	DefaultTTL        = 5 * time.Minute
	DefaultHeartbeat  = 30 * time.Second
	DefaultBackoffMin = 100 * time.Millisecond
	DefaultBackoffMax = 10 * time.Second
	// MaxSlots is the most slots a runner runs.
	MaxSlots = 1000
)

// withDefaults is c with every unset optional field at its default, or an
// error naming the first field that is wrong.
func (c Config) withDefaults() (Config, error) {
	if c.Slots == 0 {
		c.Slots = 1
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.WorkerName == "" {
		c.WorkerName = DefaultWorkerName()
	}
	if c.Backoff.Min == 0 {
		c.Backoff.Min = DefaultBackoffMin
	}
	if c.Backoff.Max == 0 {
		c.Backoff.Max = max(DefaultBackoffMax, c.Backoff.Min)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.Server == "":
		return c, errors.New("runner: Server is empty")
	case c.Token == "":
		return c, errors.New("runner: Token is empty")
	case c.Queue == "":
		return c, errors.New("runner: Queue is empty")
	case c.Handler == nil:
		return c, errors.New("runner: Handler is nil")
	case c.Slots < 1 || c.Slots > MaxSlots:
		return c, fmt.Errorf("runner: Slots must be from 1 to %d, not %d", MaxSlots, c.Slots)
	case c.TTL < time.Second:
		return c, fmt.Errorf("runner: TTL must be at least 1s, not %v", c.TTL)
	case c.RenewEvery < 0:
		return c, errors.New("runner: RenewEvery must not be negative")
	case c.Grace < 0:
		return c, errors.New("runner: Grace must not be negative")
	case c.Heartbeat < time.Second:
		return c, fmt.Errorf("runner: Heartbeat must be at least 1s, not %v", c.Heartbeat)
	case c.Backoff.Min < 0 || c.Backoff.Max < c.Backoff.Min:
		return c, errors.New("runner: Backoff must have 0 <= Min <= Max")
	}
	return c, nil
}

var workerNameUnsafe = regexp.MustCompile(`[^A-Za-z0-9._:-]+`)

// DefaultWorkerName is HOST-PID, the host name's unsafe characters dropped:
// unique per runner process, so that two runners on one host stay apart in
// GET /v1/workers.
func DefaultWorkerName() string {
	host, _ := os.Hostname()
	name := strings.Trim(workerNameUnsafe.ReplaceAllString(host, "-"), "-._:")
	if name == "" {
		name = "slot"
	}
	pid := fmt.Sprintf("-%d", os.Getpid())
	return name[:min(len(name), 100-len(pid))] + pid
}
