package runnertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/client/clienttest"
	"github.com/tether-run/tether/runner"
)

// Worker is the identity a Run's runner claims as, and the Worker of a
// NewJob.
const Worker = "runnertest"

// waitFor is the most Run waits for the node to end or the runner to stop.
const waitFor = 30 * time.Second

// Outcome is how a node's run ended, as the server recorded it.
type Outcome struct {
	// Status is the node's status: done after a completion, dead or failed
	// after a failure.
	Status client.NodeStatus
	// Result is the completion's result as stored (JSON; nil without one).
	Result json.RawMessage
	// Error is the failure's text ("" after a completion).
	Error string
	// Node is the node as the server shows it once ended.
	Node client.Node
}

// Run creates a node from spec on srv, runs it through h in a real runner
// (one slot, the worker identity Worker of srv.Tenant) and returns how it
// ended. spec's Type defaults to "task", its queue to one of Run's own.
func Run(t testing.TB, srv *clienttest.Server, h runner.Handler, spec client.NodeCreate) Outcome {
	t.Helper()
	ctx := context.Background()
	if spec.Type == "" {
		spec.Type = "task"
	}
	if spec.Queue == nil {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		q := "runnertest-" + hex.EncodeToString(b[:])
		spec.Queue = &q
	}
	if spec.MaxAttempts == nil {
		one := int64(1)
		spec.MaxAttempts = &one
	}
	created, err := srv.Client.CreateNodeWithResponse(ctx, nil, spec)
	if err != nil {
		t.Fatalf("runnertest: creating the node: %v", err)
	}
	if err := client.CheckResponse(created.HTTPResponse, created.Body); err != nil {
		t.Fatalf("runnertest: creating the node: %v", err)
	}
	id := created.JSON201.ID

	r, err := runner.New(runner.Config{
		Server: srv.URL, Token: srv.Token(srv.Tenant, Worker, "worker"), Queue: *spec.Queue, Handler: h,
		WorkerName: Worker, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Backoff: runner.Backoff{Min: 10 * time.Millisecond, Max: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatalf("runnertest: %v", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	defer func() {
		stop()
		select {
		case <-done:
		case <-time.After(waitFor):
			r.Kill()
			t.Errorf("runnertest: the runner did not stop")
		}
	}()

	deadline := time.Now().Add(waitFor)
	for {
		res, err := srv.Client.GetNodeWithResponse(ctx, id)
		if err != nil {
			t.Fatalf("runnertest: reading node %s: %v", id, err)
		}
		if res.StatusCode() != http.StatusOK {
			t.Fatalf("runnertest: reading node %s: %s", id, res.Body)
		}
		if n := *res.JSON200; terminal(n.Status) {
			return outcomeOf(n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("runnertest: node %s did not end within %v (status %s)", id, waitFor, res.JSON200.Status)
		}
		time.Sleep(5 * time.Millisecond) // the server tells no one outside it when a node ends
	}
}

func terminal(s client.NodeStatus) bool {
	switch s {
	case client.NodeStatusDone, client.NodeStatusFailed, client.NodeStatusDead, client.NodeStatusCancelled, client.NodeStatusExpired:
		return true
	}
	return false
}

func outcomeOf(n client.Node) Outcome {
	o := Outcome{Status: n.Status, Node: n}
	if n.Result != nil {
		o.Result, _ = json.Marshal(n.Result) // decoded from JSON: it encodes again
	}
	if n.Error != nil {
		o.Error = *n.Error
	}
	return o
}

// NewJob is the job a handler would receive for node: its status running,
// a lease of Worker with fence 1 and the default TTL from now, NodeJSON
// the node's JSON, a discarded log. Client is nil and Server and Token are
// empty: there is no server behind it.
func NewJob(node client.Node) *runner.Job {
	now := time.Now().UTC()
	ttl := runner.DefaultTTL
	node.Status = client.NodeStatusRunning
	lease := client.Lease{
		By: Worker, NodeID: node.ID, Fence: 1, TTLMS: ttl.Milliseconds(),
		ClaimedAt: now, RenewedAt: now, ExpiresAt: now.Add(ttl), Expires: now.Add(ttl).UnixMilli(),
	}
	node.Lease = &lease
	if node.Attempts == 0 {
		node.Attempts = 1
	}
	raw, err := json.Marshal(node)
	if err != nil {
		panic("runnertest: the node does not encode: " + err.Error()) // only unencodable Props fail
	}
	return &runner.Job{
		Node: node, NodeJSON: raw, Lease: lease, Worker: Worker,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}
