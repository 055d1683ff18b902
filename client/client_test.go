package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/apitest"
)

const nodeJSON = `{
  "id": "task-1", "type": "task", "title": "Add API rate limits", "body": "",
  "status": "queued", "queue": "default", "priority": 0, "target": null,
  "labels": ["api"], "props": {}, "attempts": 0, "max_attempts": 5,
  "run_at": null, "timeout_ms": null, "backoff": null, "parent": null,
  "on_child_fail": "fail", "ready": true, "blocked_by": [], "lease": null,
  "result": null, "error": null, "progress": null, "usage": {}, "usage_total": {},
  "version": 3, "created_by": "head", "blobs": [],
  "created_at": "2026-02-12T10:11:12.123Z", "updated_at": "2026-02-12T10:11:12.123Z"
}`

// exchange is what the fake server saw.
type exchange struct {
	method, path, contentType, auth string
	body                            map[string]any
}

// setup starts a fake server answering with status, contentType and body, and
// a client whose requests and responses are validated against the spec.
func setup(t *testing.T, status int, contentType, body string) (*client.ClientWithResponses, <-chan exchange) {
	t.Helper()
	seen := make(chan exchange, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ex := exchange{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"), auth: r.Header.Get("Authorization")}
		if raw, _ := io.ReadAll(r.Body); len(raw) > 0 {
			if err := json.Unmarshal(raw, &ex.body); err != nil {
				t.Errorf("request body: %v", err)
			}
		}
		seen <- ex
		if status == http.StatusOK || status == http.StatusCreated {
			w.Header().Set("ETag", `"3"`)
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)

	c, err := client.NewClientWithResponses(srv.URL,
		client.WithHTTPClient(&http.Client{Transport: apitest.ValidatingTransport(t, nil)}),
		client.WithBearerToken("secret"),
		client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set(apitest.ValidateRequestHeader, "1")
			return nil
		}))
	require.NoError(t, err)
	return c, seen
}

func TestCreateNode(t *testing.T) {
	t.Parallel()
	c, seen := setup(t, http.StatusCreated, "application/json", nodeJSON)

	queue, id := "default", "task-1"
	res, err := c.CreateNodeWithResponse(t.Context(), &client.CreateNodeParams{}, client.NodeCreate{
		ID: &id, Type: "task", Queue: &queue, Labels: &[]string{"api"},
		Backoff: &client.Backoff{InitialMS: 1000, MaxMS: 60000, Factor: 2},
	})
	require.NoError(t, err)
	require.NoError(t, client.CheckResponse(res.HTTPResponse, res.Body))
	require.NotNil(t, res.JSON201)
	require.Equal(t, client.NodeStatusQueued, res.JSON201.Status)
	require.Equal(t, &queue, res.JSON201.Queue)
	require.Nil(t, res.JSON201.Lease)

	ex := <-seen
	require.Equal(t, "POST /v1/nodes", ex.method+" "+ex.path)
	require.Equal(t, "Bearer secret", ex.auth)
	require.Equal(t, map[string]any{"initial_ms": 1000.0, "max_ms": 60000.0, "factor": 2.0}, ex.body["backoff"])
}

func TestUpdateNodeMergePatch(t *testing.T) {
	t.Parallel()
	c, seen := setup(t, http.StatusOK, "application/json", nodeJSON)

	ifMatch := `"2"`
	res, err := c.UpdateNodeWithApplicationMergePatchPlusJSONBodyWithResponse(t.Context(), "task-1",
		&client.UpdateNodeParams{IfMatch: &ifMatch},
		client.NodePatch{Title: client.Value("retitled"), RunAt: client.Null[time.Time]()})
	require.NoError(t, err)
	require.NotNil(t, res.JSON200)
	require.Equal(t, `"3"`, res.Headers200.ETag)

	ex := <-seen
	require.Equal(t, "application/merge-patch+json", ex.contentType)
	require.Equal(t, map[string]any{"title": "retitled", "run_at": nil}, ex.body, "absent members stay out, null is sent")
}

func TestProblem(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, http.StatusConflict, "application/problem+json",
		`{"type":"https://tether.run/problems/conflict","title":"Conflict","status":409,"code":"conflict",`+
			`"detail":"held by alice","holder":"alice","expires":1770865872000,"expires_at":"2026-02-12T03:11:12.000Z"}`)

	res, err := c.ClaimNodeWithResponse(t.Context(), "task-1", client.ClaimRequest{})
	require.NoError(t, err)
	require.Nil(t, res.JSON200)
	require.NotNil(t, res.ApplicationProblemJSON409)

	err = client.CheckResponse(res.HTTPResponse, res.Body)
	require.True(t, client.IsCode(err, client.ProblemCodeConflict))
	require.True(t, client.IsCode(err, "conflict"))
	require.False(t, client.IsCode(err, client.ProblemCodeLeaseLost))
	require.EqualError(t, err, "409 conflict: held by alice")

	var p *client.Problem
	require.True(t, errors.As(err, &p))
	require.Equal(t, "alice", *p.Holder)
	require.Equal(t, int64(1770865872000), *p.Expires)
	require.Equal(t, time.UnixMilli(1770865872000).UTC(), p.ExpiresAt.UTC())
}

func TestProblemFromOtherResponses(t *testing.T) {
	t.Parallel()
	resp := func(status int, contentType string) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {contentType}}}
	}

	require.Nil(t, client.ProblemFrom(resp(http.StatusNotFound, "application/json"), []byte(`{}`)))
	require.NoError(t, client.CheckResponse(resp(http.StatusNoContent, ""), nil))

	err := client.CheckResponse(resp(http.StatusBadGateway, "text/html"), []byte("<html>"))
	var p *client.Problem
	require.True(t, errors.As(err, &p))
	require.Equal(t, http.StatusBadGateway, p.Status)

	p = client.ProblemFrom(resp(http.StatusInternalServerError, "application/problem+json; charset=utf-8"), []byte("not json"))
	require.Equal(t, http.StatusInternalServerError, p.Status)
}

func TestNullable(t *testing.T) {
	t.Parallel()
	patch := client.PolicyPatch{ClaimTTLMaxMS: client.Null[int64](), RequestsPerSecond: client.Value(2.5)}
	raw, err := json.Marshal(patch)
	require.NoError(t, err)
	require.JSONEq(t, `{"claim_ttl_max_ms": null, "requests_per_second": 2.5}`, string(raw))

	var back client.PolicyPatch
	require.NoError(t, json.Unmarshal(raw, &back))
	require.True(t, back.ClaimTTLMaxMS.IsNull())
	require.True(t, back.ClaimTTLDefaultMS.IsZero())
	v, ok := back.RequestsPerSecond.Get()
	require.True(t, ok)
	require.Equal(t, 2.5, v)
}

func TestPublicDocuments(t *testing.T) {
	t.Parallel()
	spec, err := os.ReadFile("../openapi.yaml")
	require.NoError(t, err)
	mux := http.NewServeMux()
	serve := func(pattern, contentType string, body []byte) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", contentType)
			_, _ = w.Write(body)
		})
	}
	serve("GET /openapi.yaml", "application/yaml", spec)
	serve("GET /skill.md", "text/markdown; charset=utf-8", []byte("# Using Tether\n"))
	serve("GET /metrics", "text/plain; version=0.0.4; charset=utf-8", []byte("tether_up 1\n"))
	serve("GET /health", "application/json", []byte(`{"status":"ok","version":"dev"}`))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := client.NewClientWithResponses(srv.URL, client.WithHTTPClient(&http.Client{Transport: apitest.ValidatingTransport(t, nil)}))
	require.NoError(t, err)

	doc, err := c.GetOpenAPIWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, "3.0.3", (*doc.YAML200)["openapi"])

	skill, err := c.GetSkillWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, "# Using Tether\n", string(skill.Body))

	metrics, err := c.GetMetricsWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, metrics.StatusCode())

	health, err := c.GetHealthWithResponse(t.Context())
	require.NoError(t, err)
	require.Equal(t, client.HealthStatusOk, health.JSON200.Status)
}
