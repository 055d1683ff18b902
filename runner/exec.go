package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Limits of what a command leaves behind.
const (
	// maxResult is the most stdout kept as a node's result.
	maxResult = 1 << 20
	// stderrTail is how much of the end of stderr becomes a failed
	// node's error.
	stderrTail = 4 << 10
	// killAfter is how long a command has between SIGTERM and SIGKILL.
	killAfter = 5 * time.Second
	// pipeDelay bounds the wait for output pipes that a background
	// process of the command keeps open after the command itself exited.
	pipeDelay = 2 * time.Second
)

// exit is how a command ended and what it wrote.
type exit struct {
	err         error  // it could not be started
	code        int    // its exit code; -1 when a signal ended it
	how         string // "exit status 3", "signal: terminated"
	stopped     bool   // we signalled it before it ended
	stdout      []byte // the first maxResult bytes
	stdoutBytes int64  // how many it wrote in all
	stderrEnd   string // the last stderrTail bytes
}

// runCommand runs argv with env, stdin on its standard input, stderr copied to
// stderr as well as kept. The command runs in a process group of its own;
// once stop is closed, the group gets SIGTERM, and SIGKILL killAfter
// later (or as soon as the command itself has ended, for what is left of
// the group). started, when set, is called with the process once it runs.
func runCommand(stop <-chan struct{}, argv, env []string, stdin []byte, stderr io.Writer, started func(*os.Process)) exit {
	out := &head{max: maxResult}
	t := &tail{max: stderrTail}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout = out
	cmd.Stderr = io.MultiWriter(t, quiet{stderr})
	cmd.SysProcAttr = procAttr()
	cmd.WaitDelay = pipeDelay
	if err := cmd.Start(); err != nil {
		return exit{err: err, code: -1}
	}
	if started != nil {
		started(cmd.Process)
	}
	exited := make(chan struct{})
	var stopped atomic.Bool
	signalled := make(chan struct{})
	go func() {
		defer close(signalled)
		select {
		case <-exited:
			return
		case <-stop:
		}
		stopped.Store(true)
		_ = signalGroup(cmd.Process, syscall.SIGTERM)
		t := time.NewTimer(killAfter)
		defer t.Stop()
		select {
		case <-exited:
		case <-t.C:
		}
		_ = signalGroup(cmd.Process, syscall.SIGKILL)
	}()
	err := cmd.Wait()
	close(exited)
	<-signalled
	x := exit{
		code: -1, stopped: stopped.Load(),
		stdout: out.b.Bytes(), stdoutBytes: out.n, stderrEnd: string(t.bytes()),
	}
	if st := cmd.ProcessState; st != nil {
		x.code, x.how = st.ExitCode(), st.String()
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) {
		x.how = err.Error()
	}
	return x
}

// result is what stdout becomes as the node's result: its JSON when it is
// valid JSON, else a JSON string; null when it is empty. Beyond keep bytes
// (at most maxResult) it is an object that says it was truncated:
// {"truncated": true, "output_bytes": n, "output": "<the first keep bytes>"}.
func (x exit) result(keep int) any {
	keep = min(keep, maxResult)
	if x.stdoutBytes <= int64(keep) {
		trimmed := bytes.TrimSpace(x.stdout)
		switch {
		case len(trimmed) == 0:
			return nil
		case json.Valid(trimmed):
			return json.RawMessage(trimmed)
		}
		return strings.ToValidUTF8(string(x.stdout), "\uFFFD")
	}
	head := x.stdout[:min(len(x.stdout), keep)]
	return map[string]any{
		"truncated":    true,
		"output_bytes": x.stdoutBytes,
		// A rune cut in two at the end is dropped, not replaced.
		"output": strings.ToValidUTF8(string(head), ""),
	}
}

// errorText is what a failed node's error says: the end of stderr, or how
// the command ended when it wrote nothing there.
func (x exit) errorText() string {
	// The tail may start inside a rune: drop the broken bytes.
	if tail := strings.TrimSpace(strings.ToValidUTF8(x.stderrEnd, "")); tail != "" {
		return tail
	}
	if x.how == "" {
		return "the command failed"
	}
	return "the command ended: " + x.how
}

// head keeps the first max bytes written and counts them all; it never
// fails, so the command never blocks on a full pipe.
type head struct {
	max int
	b   bytes.Buffer
	n   int64
}

func (h *head) Write(p []byte) (int, error) {
	h.n += int64(len(p))
	if room := h.max - h.b.Len(); room > 0 {
		h.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// tail keeps the last max bytes written.
type tail struct {
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) bytes() []byte {
	if len(t.b) > t.max {
		return t.b[len(t.b)-t.max:]
	}
	return t.b
}

// quiet is a writer whose failures are ignored: a closed terminal must
// not fail the command whose stderr it shows.
type quiet struct{ w io.Writer }

func (q quiet) Write(p []byte) (int, error) {
	_, _ = q.w.Write(p)
	return len(p), nil
}
