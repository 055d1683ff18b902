package runner

// The inbox of a run: the messages sent to its node ("node:<id>") reach the
// handler through a file (a command's stdin is taken).

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
	"time"

	"github.com/tether-run/tether/client"
)

// inboxWait is how long one inbox long poll waits.
const inboxWait = 30 * time.Second

// inbox appends every message to the node of a run to a JSON Lines file
// (Job.InboxPath, a command's $TETHER_INBOX), one message per line as
// GET /v1/inbox gives it, then acknowledges it: the read receipt says the
// message reached the handler. The handler's OnMessages function is called
// after each batch of new lines.
//
// A message is written at most once per run; one the runner could not
// acknowledge (the lease was lost meanwhile) stays unread for the node's
// next holder.
type inbox struct {
	api     *client.ClientWithResponses
	log     *slog.Logger
	node    string
	path    string
	backoff Backoff

	mu      sync.Mutex
	notify  func() // the handler's OnMessages; nil for none
	written map[string]bool
}

// newInbox makes an empty inbox file for node in a directory of its own.
func newInbox(api *client.ClientWithResponses, log *slog.Logger, node string, bo Backoff) (*inbox, error) {
	dir, err := os.MkdirTemp("", "tether-inbox-")
	if err != nil {
		return nil, fmt.Errorf("error making the inbox directory: %w", err)
	}
	in := &inbox{api: api, log: log, node: node, path: filepath.Join(dir, "inbox.jsonl"), backoff: bo, written: map[string]bool{}}
	if err := os.WriteFile(in.path, nil, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("error making the inbox file: %w", err)
	}
	return in, nil
}

// remove deletes the inbox file and its directory.
func (in *inbox) remove() { _ = os.RemoveAll(filepath.Dir(in.path)) }

// onMessages sets the function called after new lines are appended.
func (in *inbox) onMessages(f func()) {
	in.mu.Lock()
	in.notify = f
	in.mu.Unlock()
}

// run long-polls the node's unread messages and delivers them until ctx ends.
func (in *inbox) run(ctx context.Context) {
	bo := newBackoff(in.backoff)
	for ctx.Err() == nil {
		if err := in.poll(ctx, inboxWait); err != nil {
			if ctx.Err() != nil {
				return
			}
			d := bo.delay(0)
			in.log.Warn("error reading the node's inbox; retrying", "err", err, "in", d.Round(time.Millisecond).String())
			sleep(ctx, d)
			continue
		}
		bo.reset()
	}
}

// poll delivers what the node's inbox holds, waiting up to wait while it is
// empty.
func (in *inbox) poll(ctx context.Context, wait time.Duration) error {
	res, err := in.api.ListInboxWithResponse(ctx, &client.ListInboxParams{
		Node: &in.node, Unread: ptrTo(true), WaitMS: ptrTo(int(wait.Milliseconds())), Limit: ptrTo(1000),
	})
	if err != nil {
		return err
	}
	if res.StatusCode() != http.StatusOK {
		return problem(res.HTTPResponse, res.Body)
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
			err = problem(a.HTTPResponse, a.Body)
		}
		if err != nil {
			in.log.Warn("error acknowledging a message", "message", id, "err", err)
		}
	}
	in.log.Info("messages for the handler", "count", len(fresh), "file", in.path)
	in.notifyHandler()
	return nil
}

func (in *inbox) append(b []byte) error {
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

// notifyHandler calls the handler's OnMessages function, if it set one.
func (in *inbox) notifyHandler() {
	in.mu.Lock()
	f := in.notify
	in.mu.Unlock()
	if f != nil {
		f()
	}
}
