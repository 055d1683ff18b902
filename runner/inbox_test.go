package runner

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// With Config.Inbox, the messages sent to a running node reach its handler
// as lines of Job.InboxPath (those sent before the run are there when it
// starts), OnMessages is called after new lines, each message is
// acknowledged once written, and the file is gone after the run.
func TestInboxDeliversMessagesToTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	send := func(body string) string {
		t.Helper()
		res, err := b.head.SendMessageWithResponse(context.Background(), client.MessageCreate{To: "node:inbox-1", Body: body})
		require.NoError(t, err)
		require.NoError(t, client.CheckResponse(res.HTTPResponse, res.Body))
		return res.JSON201.ID
	}
	lines := func(path string) []string {
		t.Helper()
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	b.create(client.NodeCreate{ID: ptrTo("inbox-1"), Queue: ptrTo("inbox")})
	firstID := send("before the run")

	type seen struct {
		path  string
		first []string
	}
	started := make(chan seen, 1)
	notified := make(chan struct{}, 10)
	finish := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, job *Job) (any, error) {
		job.OnMessages(func() { notified <- struct{}{} })
		started <- seen{job.InboxPath, lines(job.InboxPath)}
		<-finish
		return nil, nil
	})
	cfg := b.config("inbox", h)
	cfg.Inbox = true
	b.start(cfg)
	s := <-started
	require.Len(t, s.first, 1)
	var m client.Message
	require.NoError(t, json.Unmarshal([]byte(s.first[0]), &m))
	require.Equal(t, firstID, m.ID)
	require.Equal(t, "before the run", m.Body)

	secondID := send("during the run")
	<-notified
	got := lines(s.path)
	require.Len(t, got, 2)
	require.Contains(t, got[1], secondID)
	for _, id := range []string{firstID, secondID} {
		require.Eventually(t, func() bool {
			res, err := b.head.GetMessageWithResponse(context.Background(), id)
			require.NoError(t, err)
			return res.JSON200 != nil && res.JSON200.ReadAt != nil
		}, waitFor, 10*time.Millisecond, "message %s is acknowledged", id)
	}

	close(finish)
	b.waitStatus("inbox-1", client.NodeStatusDone)
	_, err := os.Stat(s.path)
	require.True(t, os.IsNotExist(err), "the inbox file is removed after the run: %v", err)
}
