package api_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/version"
)

func TestHealthAndReadyNeedNoAuth(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	anon := e.as("")

	health, err := anon.GetHealthWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, health.StatusCode(), string(health.Body))
	require.Equal(t, client.HealthStatusOk, health.JSON200.Status)
	require.JSONEq(t, `{"status":"ok","version":"`+version.String()+`"}`, string(health.Body))

	ready, err := anon.GetReadyWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ready.StatusCode(), string(ready.Body))
	require.JSONEq(t, `{"status":"ready"}`, string(ready.Body))

	// Credentials, even bad ones, do not matter on public endpoints.
	withBad, err := anon.GetHealthWithResponse(ctx, authorization("Bearer garbage"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, withBad.StatusCode(), string(withBad.Body))
}

func TestOpenAPIDocumentIsTheSpec(t *testing.T) {
	t.Parallel()
	e := start(t)
	res, err := e.as("").GetOpenAPIWithResponse(context.Background())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.True(t, strings.HasPrefix(res.HTTPResponse.Header.Get("Content-Type"), "application/yaml"), res.HTTPResponse.Header.Get("Content-Type"))

	onDisk, err := os.ReadFile("../openapi.yaml")
	require.NoError(t, err)
	require.True(t, bytes.Equal(onDisk, res.Body), "GET /openapi.yaml serves openapi.yaml byte for byte")

	doc, err := openapi3.NewLoader().LoadFromData(res.Body)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."), doc.OpenAPI)
	for _, path := range []string{"/v1/nodes", "/v1/nodes/{id}/claim", "/v1/edges", "/v1/tokens", "/health", "/openapi.yaml"} {
		require.NotNil(t, doc.Paths.Value(path), path)
	}
	require.NotNil(t, res.YAML200, "the generated client decodes it as YAML")
}

// metricValue returns the value of the sample whose name is name and whose
// labels include every label given as `k="v"`, and whether there is one.
func metricValue(t *testing.T, text, name string, labels ...string) (float64, bool) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		metric, labelSet, _ := strings.Cut(series, "{")
		if metric != name {
			continue
		}
		match := true
		for _, l := range labels {
			if !strings.Contains(labelSet, l) {
				match = false
			}
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		require.NoError(t, err, line)
		return v, true
	}
	require.NoError(t, sc.Err())
	return 0, false
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	anon := e.as("")
	scrape := func() string {
		t.Helper()
		res, err := anon.GetMetricsWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
		require.True(t, strings.HasPrefix(res.HTTPResponse.Header.Get("Content-Type"), "text/plain"), res.HTTPResponse.Header.Get("Content-Type"))
		return string(res.Body)
	}

	before := scrape()
	live, ok := metricValue(t, before, "tether_live_leases")
	require.True(t, ok, "tether_live_leases is exported before any claim")
	require.Zero(t, live)

	e.mustCreate(task("m1"))
	e.mustCreate(task("m2"))
	alice := e.user("alice")
	for _, id := range []string{"m1", "m2"} {
		claim, err := alice.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, claim.StatusCode(), string(claim.Body))
	}
	_, err := alice.ClaimNodeWithResponse(ctx, "m1", client.ClaimRequest{}) // a renewal, not a claim
	require.NoError(t, err)
	done, err := alice.CompleteNodeWithResponse(ctx, "m2", client.CompleteRequest{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, done.StatusCode(), string(done.Body))

	text := scrape()
	live, ok = metricValue(t, text, "tether_live_leases")
	require.True(t, ok)
	require.EqualValues(t, 1, live, "m1 is held, m2 is done")
	claims, ok := metricValue(t, text, "tether_claims_total")
	require.True(t, ok)
	require.EqualValues(t, 2, claims)
	claimed, ok := metricValue(t, text, "tether_http_requests_total", `method="POST"`, `route="/v1/nodes/:id/claim"`, `code="200"`)
	require.True(t, ok, "requests are counted by route template, not raw path:\n%s", text)
	require.EqualValues(t, 3, claimed)
	_, ok = metricValue(t, text, "tether_http_requests_total", `route="/v1/nodes/m1/claim"`)
	require.False(t, ok, "raw paths never become labels")
	_, ok = metricValue(t, text, "tether_http_requests_total", `route="/metrics"`)
	require.True(t, ok, "the first scrape was counted")
}

func TestSkillGuide(t *testing.T) {
	t.Parallel()
	e := start(t)
	res, err := e.as("").GetSkillWithResponse(context.Background())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode(), string(res.Body))
	require.True(t, strings.HasPrefix(res.HTTPResponse.Header.Get("Content-Type"), "text/markdown"), res.HTTPResponse.Header.Get("Content-Type"))
	guide := string(res.Body)
	for _, word := range []string{"renew", "extend", "lease_lost", "/claim", "fence"} {
		require.Contains(t, guide, word)
	}
}

func TestUnknownPathsAndMethods(t *testing.T) {
	t.Parallel()
	e := start(t)
	tok := e.token("acme", "viewer", "reader")
	for _, c := range []struct{ path, tok string }{
		{"/nope", ""},
		{"/v2/nodes", ""},
		{"/v1/nope", tok},
		{"/v1/nodes/a/b/c", tok},
	} {
		resp, body := e.raw(http.MethodGet, c.path, c.tok, "", "")
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "%s: %s", c.path, body)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"), c.path)
		p := client.ProblemFrom(resp, body)
		requireProblem(t, p, http.StatusNotFound, client.ProblemCodeNotFound)
		require.NotEmpty(t, resp.Header.Get("X-Request-Id"), c.path)
	}
	resp, body := e.raw(http.MethodDelete, "/health", "", "", "")
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, string(body))
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
}

func TestRequestIDs(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := context.Background()
	anon := e.as("")
	header := func(v string) client.RequestEditorFn {
		return func(_ context.Context, req *http.Request) error {
			req.Header.Set("X-Request-Id", v)
			return nil
		}
	}

	// Every response carries one, success or problem, public or not.
	seen := map[string]bool{}
	responses := []*http.Response{}
	health, err := anon.GetHealthWithResponse(ctx)
	require.NoError(t, err)
	responses = append(responses, health.HTTPResponse)
	metrics, err := anon.GetMetricsWithResponse(ctx)
	require.NoError(t, err)
	responses = append(responses, metrics.HTTPResponse)
	unauth, err := anon.GetTenantWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, unauth.StatusCode())
	responses = append(responses, unauth.HTTPResponse)
	ten, err := e.admin().GetTenantWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, ten.StatusCode())
	responses = append(responses, ten.HTTPResponse)
	missing, err := e.dispatcher().GetNodeWithResponse(ctx, "nope")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, missing.StatusCode())
	responses = append(responses, missing.HTTPResponse)
	for i, r := range responses {
		id := r.Header.Get("X-Request-Id")
		require.NotEmpty(t, id, "response %d", i)
		require.False(t, seen[id], "response %d: ids are unique", i)
		seen[id] = true
	}
	require.Equal(t, missing.HTTPResponse.Header.Get("X-Request-Id"), missing.ApplicationProblemJSON404.RequestID, "a problem names its request")

	// A sane caller-supplied id is echoed, on successes and problems alike.
	echoed, err := anon.GetHealthWithResponse(ctx, header("trace-42.abc:7"))
	require.NoError(t, err)
	require.Equal(t, "trace-42.abc:7", echoed.HTTPResponse.Header.Get("X-Request-Id"))
	failed, err := anon.GetTenantWithResponse(ctx, header("caller-id-1"))
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, failed.StatusCode())
	require.Equal(t, "caller-id-1", failed.HTTPResponse.Header.Get("X-Request-Id"))
	require.Equal(t, "caller-id-1", failed.ApplicationProblemJSON401.RequestID)

	// One that is not sane is replaced.
	long := strings.Repeat("x", 1000)
	replaced, err := anon.GetHealthWithResponse(ctx, header(long))
	require.NoError(t, err)
	got := replaced.HTTPResponse.Header.Get("X-Request-Id")
	require.NotEmpty(t, got)
	require.NotEqual(t, long, got)
	require.LessOrEqual(t, len(got), 128)
}

// TestPublicEndpointsRefuseABody: the endpoints that take no credentials take
// no body either; one sent with them is a bad_request problem, and the same
// request without it is served.
func TestPublicEndpointsRefuseABody(t *testing.T) {
	t.Parallel()
	e := start(t)
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/health"}, {http.MethodHead, "/health"},
		{http.MethodGet, "/ready"}, {http.MethodHead, "/ready"},
		{http.MethodGet, "/openapi.yaml"}, {http.MethodGet, "/metrics"},
		{http.MethodGet, "/skill.md"}, {http.MethodGet, "/ui"}, {http.MethodGet, "/ui/app.js"},
	} {
		resp, body := e.raw(r.method, r.path, "", "text/plain", "surprise")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s %s: %s", r.method, r.path, body)
		if r.method == http.MethodGet {
			require.Contains(t, string(body), `"code":"bad_request"`, r.path)
			require.Contains(t, string(body), "takes no request body", r.path)
		}
		resp, _ = e.raw(r.method, r.path, "", "", "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s without a body", r.method, r.path)
	}
}
