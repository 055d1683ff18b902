package intake

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHandlerCreatorMakesOneNodePerKey(t *testing.T) {
	t.Parallel()
	s := startTether(t)
	ctx := context.Background()
	node := json.RawMessage(`{"type":"email","queue":"mail","props":{"to":"a@example.com"}}`)
	first, err := s.creator.Create(ctx, "acme", node, "intake-1")
	require.NoError(t, err)
	again, err := s.creator.Create(ctx, "acme", node, "intake-1")
	require.NoError(t, err)
	require.Equal(t, first, again, "the key answers the node made first")
	other, err := s.creator.Create(ctx, "acme", node, "intake-2")
	require.NoError(t, err)
	require.NotEqual(t, first, other)

	got := s.nodes(t, "acme", "mail")
	require.Len(t, got, 2)
	require.Equal(t, Subject, got[0].CreatedBy)
	require.Empty(t, s.nodes(t, "globex", "mail"), "another tenant sees none of them")
}

func TestHandlerCreatorRejectsWhatTheAPIRefuses(t *testing.T) {
	t.Parallel()
	s := startTether(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		node   string
		status int
	}{
		"unknown field":  {`{"type":"email","queue":"mail","colour":"red"}`, http.StatusBadRequest},
		"bad queue":      {`{"type":"email","queue":"NOT A QUEUE"}`, http.StatusBadRequest},
		"missing parent": {`{"type":"email","queue":"mail","parent":"nope"}`, http.StatusNotFound},
		"not an object":  {`[1,2]`, http.StatusBadRequest},
	} {
		_, err := s.creator.Create(ctx, "acme", json.RawMessage(tc.node), "intake-"+strings.ReplaceAll(name, " ", "-"))
		var rej *Rejected
		require.True(t, errors.As(err, &rej), "%s: %v", name, err)
		require.Equal(t, tc.status, rej.Status, "%s: %s", name, rej.Reason)
		require.NotEmpty(t, rej.Reason)
	}
	require.Empty(t, s.nodes(t, "acme", "mail"), "a refused create makes nothing")
}

func TestHandlerCreatorSameKeyOtherNodeIsRejected(t *testing.T) {
	t.Parallel()
	s := startTether(t)
	ctx := context.Background()
	_, err := s.creator.Create(ctx, "acme", json.RawMessage(`{"type":"email","queue":"mail"}`), "intake-7")
	require.NoError(t, err)
	_, err = s.creator.Create(ctx, "acme", json.RawMessage(`{"type":"email","queue":"other"}`), "intake-7")
	var rej *Rejected
	require.ErrorAs(t, err, &rej)
	require.Equal(t, http.StatusUnprocessableEntity, rej.Status)
}

func TestHandlerCreatorWithoutSecretFailsPassing(t *testing.T) {
	t.Parallel()
	s := startTether(t)
	c := &HandlerCreator{Handler: s.srv.API.Handler(), Signer: &Signer{Secret: "not-the-servers-secret-0123456789abcdef"}}
	_, err := c.Create(context.Background(), "acme", json.RawMessage(`{"type":"email","queue":"mail"}`), "intake-1")
	require.Error(t, err)
	var rej *Rejected
	require.False(t, errors.As(err, &rej), "a credential refused is no fault of the row: it stays for later")
}
