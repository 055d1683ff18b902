package main

// End-to-end tests of messages: the CLI verbs (send, inbox, ack, message)
// and a running command of `tether work` getting the messages sent to its
// node through $TETHER_INBOX and a signal.

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

func TestCLIMessages(t *testing.T) {
	t.Parallel()
	e := startCLI(t)
	e.ok(e.head, "nodes", "create", "--type", "task", "--id", "t1", "--queue", "default")
	sent := decode[struct{ ID, State string }](t, e.ok(e.head, "send", "node:t1", "use the staging db", "--priority", "5", "--ttl", "1h", "-o", "json"))
	require.Equal(t, "pending", sent.State)
	requireContains(t, e.ok(e.head, "send", "alice", "hello alice", "--thread", "greet"), "sent ", "to alice")

	e.ok(e.alice, "claim", "t1")
	table := e.ok(e.alice, "inbox", "--unread")
	require.Equal(t, []string{"5", "head", "node:t1", "delivered"}, row(t, table, sent.ID)[1:5])
	inbox := decode[struct{ Items []struct{ ID, Body string } }](t, e.ok(e.alice, "inbox", "--thread", "greet", "-o", "json"))
	require.Len(t, inbox.Items, 1)
	require.Equal(t, "hello alice", inbox.Items[0].Body)

	requireContains(t, e.ok(e.alice, "ack", sent.ID), sent.ID+" read at ")
	requireContains(t, e.ok(e.head, "message", sent.ID), "state", "read", "delivered", "to alice", "by alice")
	requireContains(t, e.ok(e.alice, "renew", "t1"), "1 unread message(s)")

	bad := e.fails(1, e.head, "send", "node:nope", "x")
	requireContains(t, bad.stderr, "not_found")
	bad = e.fails(1, e.head, "send", "alice", "x", "--priority", "2000000")
	requireContains(t, bad.stderr, "bad_request", "priority")
	e.fails(2, e.alice, "inbox", "--wait", "2m")
	e.fails(1, e.bob, "ack", sent.ID)
}

func TestWorkRunnerDeliversMessagesToItsCommand(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "server", t.TempDir())
	hc := httpClient(t)
	e := &workEnv{srv: srv, hc: hc, disp: srv.as(hc, mint(t, "head", "dispatcher")), reader: srv.as(hc, mint(t, "auditor", "reader"))}
	ctx := context.Background()
	send := func(body string) string {
		t.Helper()
		res, err := e.disp.SendMessageWithResponse(ctx, client.MessageCreate{To: "node:m-1", Body: body})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, res.StatusCode(), string(res.Body))
		return res.JSON201.ID
	}

	// A message sent before the run is in the file when the command starts.
	e.create(t, client.NodeCreate{ID: ptr("m-1"), Queue: ptr("w-msg")})
	before := send("before you start: use branch fix-42")
	r := e.startRunner(t, "runner-msg", "--queue", "w-msg", "--worker-name", "msg", "--inbox-signal", "USR1", "--", "sh", "-c",
		`trap 'echo signalled >> "$OUT/sig-$TETHER_NODE_ID"' USR1; `+
			`cp "$TETHER_INBOX" "$OUT/start-$TETHER_NODE_ID"; echo ready > "$OUT/ready-$TETHER_NODE_ID"; `+workGate+
			`cp "$TETHER_INBOX" "$OUT/inbox-$TETHER_NODE_ID"; echo '"done"'`)
	r.file(t, "ready-m-1")
	start, err := os.ReadFile(filepath.Join(r.out, "start-m-1"))
	require.NoError(t, err)
	require.Contains(t, string(start), "use branch fix-42")

	// One sent while it runs is appended, the command is signalled, and the
	// sender sees it read by the runner's identity.
	during := send("stop and summarize")
	r.file(t, "sig-m-1")
	for _, id := range []string{before, during} {
		res, err := e.disp.GetMessageWithResponse(ctx, id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.Equal(t, client.MessageStateRead, res.JSON200.State)
		require.Equal(t, "runner-msg", *res.JSON200.ReadBy)
	}

	r.open(t, "m-1")
	e.waitNode(t, "m-1", client.NodeStatusDone)
	lines := strings.Split(strings.TrimSpace(r.file(t, "inbox-m-1")), "\n")
	require.Len(t, lines, 2, "each message once, one per line")
	var bodies []string
	for _, l := range lines {
		var m client.Message
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		require.Equal(t, "head", m.From)
		bodies = append(bodies, m.Body)
	}
	require.Equal(t, []string{"before you start: use branch fix-42", "stop and summarize"}, bodies)
	r.stop(t)
}
