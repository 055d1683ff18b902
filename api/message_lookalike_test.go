package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// A message to a node is for whoever holds the node. An identity whose
// subject is the node's address ("node:n1") is refused at authentication,
// so it can neither list, read nor acknowledge the message, and the
// message waits, untouched, for the identity that claims the node.
func TestMessageToNodeIsNotReadByALookAlikeSubject(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	head, alice := e.dispatcher(), e.user("alice", "worker")
	e.mustCreate(task("n1"))
	m := send(t, head, client.MessageCreate{To: "node:n1", Body: "secret deploy key"})

	mallory := e.user("node:n1", "worker")
	list, err := mallory.ListInboxWithResponse(ctx, &client.ListInboxParams{})
	require.NoError(t, err)
	requireProblem(t, list.ApplicationProblemJSON401, http.StatusUnauthorized, client.ProblemCodeUnauthorized)
	require.Contains(t, list.ApplicationProblemJSON401.Detail, `"node:"`, "the detail names the reserved prefix")
	requireProblem(t, ack(t, mallory, m.ID).ApplicationProblemJSON401, http.StatusUnauthorized, client.ProblemCodeUnauthorized)
	requireProblem(t, getMessage(t, mallory, m.ID).ApplicationProblemJSON401, http.StatusUnauthorized, client.ProblemCodeUnauthorized)

	untouched := getMessage(t, head, m.ID)
	require.Equal(t, http.StatusOK, untouched.StatusCode(), string(untouched.Body))
	require.Equal(t, client.MessageStatePending, untouched.JSON200.State)
	require.Nil(t, untouched.JSON200.DeliveredTo)

	e.claim(alice, "n1")
	got := inbox(t, alice, client.ListInboxParams{Unread: ptr(true)})
	require.Equal(t, []string{"secret deploy key"}, bodies(got))
	require.Equal(t, "alice", *got.Items[0].DeliveredTo)
	a := ack(t, alice, m.ID)
	require.Equal(t, http.StatusOK, a.StatusCode(), string(a.Body))
	require.Equal(t, "alice", *a.JSON200.ReadBy)

	evs, err := head.ListNodeEventsWithResponse(ctx, "n1", &client.ListNodeEventsParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, evs.StatusCode(), string(evs.Body))
	var readBy []string
	for _, ev := range evs.JSON200.Items {
		if ev.Type == client.EventTypeMessageRead {
			readBy = append(readBy, ev.By)
		}
	}
	require.Equal(t, []string{"alice"}, readBy)
}
