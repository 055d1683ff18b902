package main

// The inbox of a running command: the messages sent to its node
// ("node:<id>") reach the command through a file, since its stdin is taken.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/tether-run/tether/client"
)

// workInboxWait is how long one inbox long poll waits.
const workInboxWait = 30 * time.Second

// workInbox appends every message to the node a command runs to a JSON Lines
// file ($TETHER_INBOX), one message per line as GET /v1/inbox gives it, then
// acknowledges it: the read receipt says the message reached the command.
// With a signal set, the command gets it after each batch of new lines.
//
// A message is written at most once per run; one the runner could not
// acknowledge (the lease was lost meanwhile) stays unread for the node's
// next holder.
type workInbox struct {
	api    *client.ClientWithResponses
	log    *slog.Logger
	node   string
	path   string
	signal syscall.Signal // 0: none

	mu      sync.Mutex
	proc    *os.Process // the command, once it runs
	written map[string]bool
}

// newWorkInbox makes an empty inbox file for node in a directory of its own.
func newWorkInbox(api *client.ClientWithResponses, log *slog.Logger, node string, sig syscall.Signal) (*workInbox, error) {
	dir, err := os.MkdirTemp("", "tether-inbox-")
	if err != nil {
		return nil, fmt.Errorf("error making the inbox directory: %w", err)
	}
	in := &workInbox{api: api, log: log, node: node, path: filepath.Join(dir, "inbox.jsonl"), signal: sig, written: map[string]bool{}}
	if err := os.WriteFile(in.path, nil, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("error making the inbox file: %w", err)
	}
	return in, nil
}

// remove deletes the inbox file and its directory.
func (in *workInbox) remove() { _ = os.RemoveAll(filepath.Dir(in.path)) }

// started records the command's process, the target of the signal.
func (in *workInbox) started(p *os.Process) {
	in.mu.Lock()
	in.proc = p
	in.mu.Unlock()
}

// run long-polls the node's unread messages and delivers them until ctx ends.
func (in *workInbox) run(ctx context.Context) {
	var bo workBackoff
	for ctx.Err() == nil {
		if err := in.poll(ctx, workInboxWait); err != nil {
			if ctx.Err() != nil {
				return
			}
			d := bo.delay(0)
			in.log.Warn("error reading the node's inbox; retrying", "err", err, "in", d.Round(time.Millisecond).String())
			workSleep(ctx, d)
			continue
		}
		bo.reset()
	}
}

// poll delivers what the node's inbox holds, waiting up to wait while it is
// empty.
func (in *workInbox) poll(ctx context.Context, wait time.Duration) error {
	res, err := in.api.ListInboxWithResponse(ctx, &client.ListInboxParams{
		Node: &in.node, Unread: ptrTo(true), WaitMS: ptrTo(int(wait.Milliseconds())), Limit: ptrTo(1000),
	})
	if err != nil {
		return err
	}
	if res.StatusCode() != http.StatusOK {
		return workProblem(res.HTTPResponse, res.Body)
	}
	var page struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(res.Body, &page); err != nil {
		return fmt.Errorf("the inbox answered with an unexpected body: %w", err)
	}
	var lines bytes.Buffer
	var fresh []string
	for i, m := range res.JSON200.Items {
		if in.written[m.ID] {
			continue
		}
		lines.Write(bytes.TrimSpace(page.Items[i]))
		lines.WriteByte('\n')
		fresh = append(fresh, m.ID)
	}
	if len(fresh) == 0 {
		return nil
	}
	if err := in.append(lines.Bytes()); err != nil {
		return err
	}
	for _, id := range fresh {
		in.written[id] = true
		a, err := in.api.AckMessageWithResponse(ctx, id)
		if err == nil {
			err = workProblem(a.HTTPResponse, a.Body)
		}
		if err != nil {
			in.log.Warn("error acknowledging a message", "message", id, "err", err)
		}
	}
	in.log.Info("messages for the command", "count", len(fresh), "file", in.path)
	in.notify()
	return nil
}

func (in *workInbox) append(b []byte) error {
	f, err := os.OpenFile(in.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("error opening the inbox file: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("error writing the inbox file: %w", err)
	}
	return nil
}

// notify sends the signal to the command, if one is set and it runs.
func (in *workInbox) notify() {
	in.mu.Lock()
	p := in.proc
	in.mu.Unlock()
	if in.signal == 0 || p == nil {
		return
	}
	if err := p.Signal(in.signal); err != nil {
		in.log.Warn("error signalling the command", "signal", in.signal.String(), "err", err)
	}
}
