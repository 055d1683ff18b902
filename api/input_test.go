package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// badInput is one request that must be refused with a 400 naming field.
type badInput struct {
	method, path, body, field string
	tok                       string
}

func requireRefused(t *testing.T, e *env, cases []badInput, reason string) {
	t.Helper()
	for _, tc := range cases {
		ct := "application/json"
		if tc.method == http.MethodPatch {
			ct = "application/merge-patch+json"
		}
		resp, b := e.raw(tc.method, tc.path, tc.tok, ct, tc.body)
		status, body := resp.StatusCode, b
		if tc.path == "/v1/batch" && status == http.StatusOK {
			status, body = batchOp0(t, status, b)
		}
		require.Equal(t, http.StatusBadRequest, status, "%s %s %q: %s", tc.method, tc.path, tc.body, body)
		var p problemBody
		require.NoError(t, json.Unmarshal(body, &p))
		require.Equal(t, tc.field, p.Field, "%s %s %q: %s", tc.method, tc.path, tc.body, body)
		require.Contains(t, p.Detail, reason, "%s %s", tc.method, tc.path)
	}
}

// inputEnv is a server with a node "held" claimed by w1 and a ready node
// "ready", for the input tests.
func inputEnv(t *testing.T) (e *env, w, d, admin string) {
	e = start(t)
	w, d, admin = e.token("acme", "w1", "worker"), e.token("acme", "head", "dispatcher"), e.token("acme", "root", "admin")
	e.mustCreate(task("held"))
	e.mustCreate(task("ready"))
	st, b := post(e, w, "/v1/nodes/held/claim", `{}`)
	require.Equal(t, http.StatusOK, st, string(b))
	return e, w, d, admin
}

// requireUnchanged checks the nodes the refused requests aimed at.
func requireUnchanged(t *testing.T, e *env, tok string) {
	t.Helper()
	resp, b := e.raw(http.MethodGet, "/v1/nodes/held", tok, "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(b), `"status":"running"`)
	require.Contains(t, string(b), `"version":2`, "the held node was changed: %s", b)
	resp, b = e.raw(http.MethodGet, "/v1/nodes?limit=10", tok, "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 2, strings.Count(string(b), `"created_by"`), "no node was created (held, ready; identity:w1 is not listed): %s", b)
	resp, b = e.raw(http.MethodGet, "/v1/workers", tok, "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(b), `"items":[]`, "no worker was recorded")
}

// TestInvalidUTF8IsRefused: a string that is not UTF-8, in any field a
// client writes (free-form values included), is a 400 naming it, and
// nothing is stored; an unpaired surrogate escape is refused alike.
func TestInvalidUTF8IsRefused(t *testing.T) {
	t.Parallel()
	e, w, d, admin := inputEnv(t)
	bad := "\"v\xc3\x28\xff\""
	requireRefused(t, e, []badInput{
		{http.MethodPost, "/v1/nodes/held/complete", `{"result":` + bad + `}`, "result", w},
		{http.MethodPost, "/v1/nodes/held/complete", `{"result":{"deep":[1,` + bad + `]}}`, "result.deep[1]", w},
		{http.MethodPost, "/v1/nodes/held/complete", `{"result":"\ud800"}`, "result", w},
		{http.MethodPost, "/v1/nodes/held/complete", `{"result":"\udc00\ud800"}`, "result", w},
		{http.MethodPost, "/v1/nodes/held/complete", `{"result":{` + bad + `:1}}`, "result", w},
		{http.MethodPost, "/v1/nodes", `{"type":"t","title":` + bad + `}`, "title", d},
		{http.MethodPost, "/v1/nodes", `{"type":"t","props":{"k":` + bad + `}}`, "props.k", d},
		{http.MethodPost, "/v1/nodes", `{"type":"t","labels":["ok",` + bad + `]}`, "labels[1]", d},
		{http.MethodPost, "/v1/nodes/batch", `{"items":[{"type":"t"},{"type":"t","body":` + bad + `}]}`, "items[1].body", d},
		{http.MethodPatch, "/v1/nodes/held", `{"props":{"k":` + bad + `}}`, "props.k", d},
		{http.MethodPost, "/v1/nodes/held/comments", `{"body":` + bad + `}`, "body", w},
		{http.MethodPost, "/v1/nodes/held/fail", `{"error":` + bad + `}`, "error", w},
		{http.MethodPost, "/v1/nodes/held/progress", `{"message":` + bad + `}`, "message", w},
		{http.MethodPost, "/v1/workers/heartbeat", `{"worker":"s1","status":"idle","meta":{"m":` + bad + `}}`, "meta.m", w},
		{http.MethodPost, "/v1/batch", `{"ops":[{"op":"complete","id":"held","result":` + bad + `}]}`, "ops[0].result", w},
		{http.MethodPost, "/v1/tokens", `{"sub":"x","name":` + bad + `}`, "name", admin},
	}, "UTF-8")
	requireUnchanged(t, e, d)

	// Valid UTF-8, and a surrogate pair, are stored and served as sent.
	st, b := post(e, w, "/v1/nodes/held/complete", `{"result":{"v":"héllo \ud83d\ude00"}}`)
	require.Equal(t, http.StatusOK, st, string(b))
	res, err := e.user("w1").GetNodeWithResponse(context.Background(), "held")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode())
	require.JSONEq(t, `{"v":"héllo 😀"}`, string(mustJSON(t, res.JSON200.Result)))
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// nested is v inside n arrays.
func nested(n int, v string) string {
	return strings.Repeat("[", n) + v + strings.Repeat("]", n)
}

// TestNestingDepthIsCapped: a body may nest 64 levels (the body itself is
// level 1); one more is a 400 naming where, for every field a client writes,
// PATCH and batch included. What is accepted, the Go client reads back.
func TestNestingDepthIsCapped(t *testing.T) {
	t.Parallel()
	e, w, d, _ := inputEnv(t)
	// {"type":"t","props":{"a": <62 arrays>}}: body 1, props 2, arrays 3..64.
	st, b := post(e, d, "/v1/nodes", `{"id":"deep","type":"t","queue":"default","props":{"a":`+nested(62, "1")+`}}`)
	require.Equal(t, http.StatusCreated, st, string(b))
	c := e.user("w1")
	got, err := c.GetNodeWithResponse(context.Background(), "deep")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, got.StatusCode())
	claim, err := c.ClaimNextWithResponse(context.Background(), "default", client.ClaimNextRequest{})
	require.NoError(t, err, "the Go client decodes the claim of the deepest node allowed")
	require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))
	require.NotNil(t, claim.JSON200)
	list, err := c.ListNodesWithResponse(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, list.StatusCode())

	deepPath := "a" + strings.Repeat("[0]", 62)
	requireRefused(t, e, []badInput{
		{http.MethodPost, "/v1/nodes", `{"type":"t","props":{"a":` + nested(63, "1") + `}}`, "props." + deepPath, d},
		{http.MethodPost, "/v1/nodes", `{"type":"t","props":{"a":` + nested(9998, "1") + `}}`, "props." + deepPath, d},
		{http.MethodPost, "/v1/nodes/batch", `{"items":[{"type":"t","props":` + nested(62, "1") + `}]}`, "items[0].props" + strings.Repeat("[0]", 61), d},
		{http.MethodPatch, "/v1/nodes/held", `{"props":{"a":` + nested(63, "1") + `}}`, "props." + deepPath, d},
		{http.MethodPost, "/v1/nodes/held/complete", `{"result":` + nested(64, "1") + `}`, "result" + strings.Repeat("[0]", 63), w},
		{http.MethodPost, "/v1/batch", `{"ops":[{"op":"complete","id":"held","result":` + nested(62, "1") + `}]}`, "ops[0].result" + strings.Repeat("[0]", 61), w},
		{http.MethodPost, "/v1/workers/heartbeat", `{"worker":"s1","status":"idle","meta":{"m":` + nested(63, "1") + `}}`, "meta.m" + strings.Repeat("[0]", 62), w},
	}, "deeper than 64 levels")
}

// TestDuplicateKeysAreRefused: a key twice in one object, at any depth, in
// bodies and batch ops, is a 400 naming it; nothing changes.
func TestDuplicateKeysAreRefused(t *testing.T) {
	t.Parallel()
	e, w, d, admin := inputEnv(t)
	var many strings.Builder // an object large enough to be checked with a set
	for i := range 40 {
		fmt.Fprintf(&many, `"k%d":%d,`, i, i)
	}
	requireRefused(t, e, []badInput{
		{http.MethodPost, "/v1/nodes", `{"id":"first","type":"t","id":"second"}`, "id", d},
		{http.MethodPost, "/v1/nodes", `{"type":"t","props":{"a":1,"b":{"c":1,"c":2}}}`, "props.b.c", d},
		{http.MethodPost, "/v1/nodes", `{"type":"t","props":{"a":1,"\u0061":2}}`, "props.a", d},
		{http.MethodPost, "/v1/nodes", `{"type":"t","props":{` + many.String() + `"k7":0}}`, "props.k7", d},
		{http.MethodPost, "/v1/nodes", `{"type":"t","props":{"a":{"":1,"":2}}}`, "props.a.", d}, // an empty key, named empty
		{http.MethodPost, "/v1/nodes/batch", `{"items":[{"type":"t"},{"type":"t","type":"u"}]}`, "items[1].type", d},
		{http.MethodPatch, "/v1/nodes/held", `{"title":"a","title":"b"}`, "title", d},
		{http.MethodPost, "/v1/batch", `{"ops":[{"op":"renew","id":"held","id":"ready"}]}`, "ops[0].id", w},
		{http.MethodPost, "/v1/batch", `{"ops":[{"op":"complete","id":"held","result":{"x":1,"x":2}}]}`, "ops[0].result.x", w},
		{http.MethodPost, "/v1/nodes/held/complete", `{"fence":1,"fence":99}`, "fence", w},
		{http.MethodPost, "/v1/workers/heartbeat", `{"worker":"s1","status":"idle","meta":{"m":1,"m":1}}`, "meta.m", w},
		{http.MethodPatch, "/v1/tenant/policy", `{"max_attempts_default":3,"max_attempts_default":4}`, "max_attempts_default", admin},
	}, "more than once")
	requireUnchanged(t, e, d)
}

// TestNonJSONBodiesAre415: a body in another media type is a 415 and
// creates nothing; JSON under its other names, an empty body of any type,
// and a JSON body without a Content-Type are accepted.
func TestNonJSONBodiesAre415(t *testing.T) {
	t.Parallel()
	e, w, d, _ := inputEnv(t)
	body := `{"type":"t"}`
	for _, ct := range []string{
		"text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x", "application/xml", "application/json; charset=latin1", "application/json;;",
	} {
		resp, b := e.raw(http.MethodPost, "/v1/nodes", d, ct, body)
		require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "%s: %s", ct, b)
		var p problemBody
		require.NoError(t, json.Unmarshal(b, &p))
		require.Equal(t, "unsupported_media_type", p.Code)
	}
	resp, b := e.raw(http.MethodPost, "/v1/nodes/held/renew", w, "text/plain", `{}`)
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, string(b))
	resp, b = e.raw(http.MethodPost, "/v1/batch", w, "text/plain", `{"ops":[{"op":"renew","id":"held"}]}`)
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, string(b))
	requireUnchanged(t, e, d)

	for _, ct := range []string{"", "application/json", "application/json; charset=UTF-8", "application/vnd.tether+json"} {
		resp, b := e.raw(http.MethodPost, "/v1/nodes", d, ct, body)
		require.Equal(t, http.StatusCreated, resp.StatusCode, "%q: %s", ct, b)
	}
	// An empty body needs no JSON type.
	resp, b = e.raw(http.MethodPost, "/v1/nodes/held/renew", w, "text/plain", ``)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	resp, b = e.raw(http.MethodPatch, "/v1/nodes/held", d, "application/merge-patch+json", `{"title":"x"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
}

// TestFieldNamesAreCaseSensitive: a key that matches a field only when case
// is ignored (which encoding/json accepts) is refused naming it and the
// field it meant, and changes nothing; upper case in values is no key.
func TestFieldNamesAreCaseSensitive(t *testing.T) {
	t.Parallel()
	e, w, d, admin := inputEnv(t)
	requireRefused(t, e, []badInput{
		{http.MethodPost, "/v1/nodes", `{"Type":"t"}`, "Type", d},
		{http.MethodPost, "/v1/nodes", `{"type":"t","backoff":{"Initial_ms":10,"max_ms":20,"factor":2}}`, "backoff.Initial_ms", d},
		{http.MethodPost, "/v1/nodes", `{"type":"t","labelſ":["x"]}`, "labelſ", d}, // ſ folds to s
		{http.MethodPost, "/v1/nodes/batch", `{"items":[{"type":"t"},{"type":"t","Queue":"q"}]}`, "items[1].Queue", d},
		{http.MethodPost, "/v1/nodes/batch", `{"Items":[{"type":"t"}]}`, "Items", d},
		{http.MethodPost, "/v1/nodes/ready/claim", `{"TTL_MS":1000}`, "TTL_MS", w},
		{http.MethodPost, "/v1/nodes/held/complete", `{"Fence":1}`, "Fence", w},
		{http.MethodPost, "/v1/batch", `{"ops":[{"op":"complete","id":"held","Fence":1}]}`, "Fence", w},
	}, "case-sensitive")
	// Merge patches compare their keys exactly already.
	requireRefused(t, e, []badInput{
		{http.MethodPatch, "/v1/nodes/held", `{"Title":"a"}`, "Title", d},
		{http.MethodPatch, "/v1/tenant/policy", `{"Max_attempts_default":3}`, "Max_attempts_default", admin},
	}, "unknown field")
	requireUnchanged(t, e, d)
	resp, b := e.raw(http.MethodPost, "/v1/nodes", d, "application/json", `{"type":"Task","title":"Hello, ſ and K","props":{"Upper":1}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(b))
}
