package runner

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"syscall"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tether-run/tether/internal/traceparent"
)

// Exec is the Handler of `tether work`: it runs a command for each node.
//
// The command gets the node's JSON on stdin and, besides this process's
// environment, TETHER_NODE_ID, TETHER_FENCE, TETHER_URL, TETHER_TOKEN,
// TETHER_WORKER (the slot's name), TETHER_INBOX (Job.InboxPath, with
// Config.Inbox) and, with a tracer, TRACEPARENT (the run's span). It runs in
// a process group of its own; when the handler's context ends the group
// gets SIGTERM, and SIGKILL 5 s later.
//
// Exit 0 completes the node with stdout as its result: its JSON when it is
// valid JSON, else a string; beyond 1 MiB an object that says it was
// truncated, shrunk further while the server refuses it as too large. Any
// other exit fails the node with the last 4 KiB of stderr (*ExitError).
type Exec struct {
	// Argv is the command and its arguments; Argv[0] is looked up in PATH.
	Argv []string
	// Stderr gets a copy of the command's stderr (default os.Stderr).
	Stderr io.Writer
	// InboxSignal, when not 0, is sent to the command after new messages
	// are appended to its inbox file.
	InboxSignal syscall.Signal
}

// ExitError is a command that did not exit 0 on its own, or could not start.
type ExitError struct {
	// Code is the exit code; -1 when a signal ended the command or it could
	// not start.
	Code int
	// How says how it ended ("exit status 3", "signal: terminated").
	How string
	// Stopped is set when the runner stopped it (its context ended).
	Stopped bool
	// Text is the node's error: the end of stderr, or How when stderr was
	// empty.
	Text string
}

func (e *ExitError) Error() string { return e.Text }

// Work runs the command for job.
func (e *Exec) Work(ctx context.Context, job *Job) (any, error) {
	if len(e.Argv) == 0 {
		return nil, errors.New("runner: Exec has no command")
	}
	env := append(os.Environ(),
		"TETHER_NODE_ID="+job.Lease.NodeID,
		"TETHER_FENCE="+strconv.FormatInt(job.Lease.Fence, 10),
		"TETHER_URL="+job.Server,
		"TETHER_TOKEN="+job.Token,
		"TETHER_WORKER="+job.Worker,
	)
	if job.InboxPath != "" {
		env = append(env, "TETHER_INBOX="+job.InboxPath)
	}
	if tp := traceparent.Of(ctx); tp != "" {
		env = append(env, "TRACEPARENT="+tp)
	}
	var started func(*os.Process)
	if e.InboxSignal != 0 {
		started = func(p *os.Process) {
			job.OnMessages(func() {
				if err := p.Signal(e.InboxSignal); err != nil {
					job.Log.Warn("error signalling the command", "signal", e.InboxSignal.String(), "err", err)
				}
			})
		}
	}
	stderr := e.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	job.Log.Info("running the command")
	x := runCommand(ctx.Done(), e.Argv, env, job.NodeJSON, stderr, started)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.Int("process.exit.code", x.code), attribute.Bool("tether.run.stopped", x.stopped))
		if x.err != nil || x.code != 0 {
			span.SetStatus(codes.Error, x.how)
		}
	}
	switch {
	case x.err != nil:
		job.Log.Error("the command could not start", "err", x.err)
		return nil, &ExitError{Code: -1, How: x.err.Error(), Text: "the command could not start: " + x.err.Error()}
	case x.stopped:
		job.Log.Info("the command was stopped", "exit", x.how)
		return nil, &ExitError{Code: x.code, How: x.how, Stopped: true, Text: x.errorText()}
	case x.code != 0:
		job.Log.Info("the command failed", "exit", x.how)
		return nil, &ExitError{Code: x.code, How: x.how, Text: x.errorText()}
	}
	if x.stdoutBytes > maxResult {
		job.Log.Warn("the output is over 1 MiB: the result keeps its start", "bytes", x.stdoutBytes)
	}
	return output{x: x, keep: maxResult}, nil
}

// output is a command's stdout as a node's result (exit.result), keeping
// at most keep bytes of it; it shrinks by four each time the server refuses
// it as too large, down to an empty output.
type output struct {
	x    exit
	keep int
}

// value is what the completion sends as the result.
func (o output) value() any { return o.x.result(o.keep) }

// Shrink keeps a quarter of what o keeps, until nothing is kept.
func (o output) Shrink() (any, bool) {
	if o.keep == 0 {
		return nil, false
	}
	return output{x: o.x, keep: o.keep / 4}, true
}
