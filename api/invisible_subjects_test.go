package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// Characters that show nothing, each of a kind the issue found passing.
var invisibleInSubjects = map[string]string{
	"zero-width space":       "\u200b",
	"no-break space":         "\u00a0",
	"C1 control (NEL)":       "\u0085",
	"C1 control (CSI)":       "\u009b",
	"right-to-left override": "\u202e",
	"byte-order mark":        "\ufeff",
	"line separator":         "\u2028",
	"paragraph separator":    "\u2029",
	"zero-width joiner":      "\u200d",
	"soft hyphen":            "\u00ad",
	"private use":            "\ue000",
	"unassigned":             "\u0378",
	"variation selector":     "\ufe0f",
	"Hangul filler":          "\u3164",
}

// Subjects that read as a reserved name without being it.
var lookAlikeSubjects = map[string]string{
	"System":           `look like "system"`,
	"ѕуѕtеm":           `look like "system"`, // Cyrillic dze, u, dze, ie
	"ｓｙｓｔｅｍ":           `look like "system"`, // fullwidth
	"sуstem":           `look like "system"`,
	"nоde:n1":          `look-alike of "node:"`, // Cyrillic o
	"Schedule:nightly": `look-alike of "schedule:"`,
	"іdentity:alice":   `look-alike of "identity:"`, // Cyrillic i
}

// A subject with an invisible character, or one that looks like a reserved
// name, names no identity: a JWT with it is 401, and an API key's sub, a
// node's target (at create and patch), a release's hand-off and a
// message's "to" are 400 naming the field. Nothing changes: no key, no
// node, no event, the claimed node untargeted and still its holder's.
func TestInvisibleAndLookAlikeSubjectsNameNoIdentity(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	admin, head, alice := e.admin(), e.dispatcher(), e.user("alice", "worker")
	e.mustCreate(task("t1"))
	e.claim(alice, "t1")
	before := tenantEvents(t, head)

	type bad struct{ sub, name, jwtDetail, detail string }
	var subs []bad
	for name, c := range invisibleInSubjects {
		for _, sub := range []string{"system" + c, c + "alice", "al" + c + "ice"} {
			subs = append(subs, bad{sub, name, "token sub is not a valid subject", "invisible characters"})
		}
	}
	for sub, want := range lookAlikeSubjects {
		subs = append(subs, bad{sub, "look-alike " + sub, want, want})
	}
	for _, b := range subs {
		nodes, err := e.user(b.sub, "admin").ListNodesWithResponse(ctx, &client.ListNodesParams{})
		require.NoError(t, err)
		requireProblem(t, nodes.ApplicationProblemJSON401, http.StatusUnauthorized, client.ProblemCodeUnauthorized)
		require.Contains(t, nodes.ApplicationProblemJSON401.Detail, b.jwtDetail, b.name)

		key, err := admin.CreateTokenWithResponse(ctx, client.TokenCreate{Sub: b.sub, Roles: []client.Role{client.RoleWorker}})
		require.NoError(t, err)
		requireBadField(t, key.ApplicationProblemJSON400, "sub", b.detail)

		created, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr("targeted"), Type: "task", Target: ptr(b.sub)})
		require.NoError(t, err)
		requireBadField(t, created.ApplicationProblemJSON400, "target", b.detail)

		patched, err := head.UpdateNodeWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, "t1", nil, client.NodePatch{Target: client.Value(b.sub)})
		require.NoError(t, err)
		requireBadField(t, patched.ApplicationProblemJSON400, "target", b.detail)

		released, err := alice.ReleaseNodeWithResponse(ctx, "t1", client.ReleaseRequest{To: ptr(b.sub)})
		require.NoError(t, err)
		requireBadField(t, released.ApplicationProblemJSON400, "to", b.detail)

		sent, err := head.SendMessageWithResponse(ctx, client.MessageCreate{To: b.sub, Body: "hello"})
		require.NoError(t, err)
		requireBadField(t, sent.ApplicationProblemJSON400, "to", b.detail)
	}

	keys, err := admin.ListTokensWithResponse(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, keys.StatusCode(), string(keys.Body))
	require.Empty(t, keys.JSON200.Items)
	gone, err := head.GetNodeWithResponse(ctx, "targeted")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, gone.StatusCode())
	t1, err := head.GetNodeWithResponse(ctx, "t1")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, t1.StatusCode(), string(t1.Body))
	require.Nil(t, t1.JSON200.Target)
	require.NotNil(t, t1.JSON200.Lease)
	require.Equal(t, "alice", t1.JSON200.Lease.By)
	require.Equal(t, before, tenantEvents(t, head), "no event was written")
}

// A lone surrogate in a JSON string is no character: a subject holding one
// is refused as the body's other strings are.
func TestASubjectWithALoneSurrogateIsRefused(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("acme", "root", "admin")
	resp, body := e.raw(http.MethodPost, "/v1/tokens", tok, "application/json", `{"sub":"system\ud800","roles":["worker"]}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"field":"sub"`)
	require.Contains(t, string(body), "not valid UTF-8")
	keys, err := e.admin().ListTokensWithResponse(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, keys.StatusCode(), string(keys.Body))
	require.Empty(t, keys.JSON200.Items)
}

// tenantEvents is the number of events in the caller's tenant.
func tenantEvents(t *testing.T, c *client.ClientWithResponses) int {
	t.Helper()
	n := 0
	var after *int64
	for {
		page, err := c.ListEventsWithResponse(context.Background(), &client.ListEventsParams{After: after})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, page.StatusCode(), string(page.Body))
		if len(page.JSON200.Items) == 0 {
			return n
		}
		n += len(page.JSON200.Items)
		after = &page.JSON200.Items[len(page.JSON200.Items)-1].Seq
	}
}
