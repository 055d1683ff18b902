package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/apitest"
	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/server"
	"github.com/tether-run/tether/internal/testserver"
)

const testSecret = testserver.Secret

// env is one real server on a free port with a real Badger store in a temp
// dir and a fake clock that decides lease expiry (internal/testserver), or
// two servers of a cluster on etcd or PostgreSQL (TETHER_TEST_STORE=etcd or
// postgres).
type env struct {
	t   testing.TB
	srv *server.Server
	url string
	clk *clocktest.Fake
	// dataDir is the server's TETHER_DATA_DIR.
	dataDir string
}

type option = testserver.Option

func start(t testing.TB, opts ...option) *env {
	t.Helper()
	if onCluster() {
		cfg := testserver.Config(t)
		for _, o := range opts {
			o(&cfg)
		}
		srv, url := startOnCluster(t, cfg)
		return &env{t: t, srv: srv, url: url, clk: cfg.Clock.(*clocktest.Fake)}
	}
	s := testserver.Start(t, opts...)
	return &env{t: t, srv: s.Server, url: s.URL, clk: s.Clock, dataDir: s.DataDir}
}

// watchReaper enables the reaper's signal: call it before the move of the
// clock whose expiry waitReaped waits for.
func (e *env) watchReaper() { e.srv.Leases.TestSignals.Reaped.Init(e.t) }

// waitReaped waits until the reaper has settled what fell due and readers
// see it (leasing.TestSignals.Reaped).
func (e *env) waitReaped() {
	e.t.Helper()
	e.srv.Leases.TestSignals.Reaped.Wait(e.t)
}

// advanceAndReap moves the fake clock by d and waits until the reaper has
// settled the expiry that fell due.
func (e *env) advanceAndReap(d time.Duration) {
	e.t.Helper()
	e.watchReaper()
	e.clk.Advance(d)
	e.waitReaped()
}

// token mints an HS256 JWT valid for an hour of the fake clock.
func (e *env) token(tid, sub string, roles ...string) string {
	e.t.Helper()
	claims := jwt.MapClaims{"sub": sub, "tid": tid, "exp": e.clk.Now().Add(time.Hour).Unix()}
	if len(roles) > 0 {
		claims["roles"] = roles
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(testSecret))
	require.NoError(e.t, err)
	return tok
}

// as returns a generated client authenticated with tok whose every response
// is validated against openapi.yaml.
func (e *env) as(tok string) *client.ClientWithResponses {
	e.t.Helper()
	hc := &http.Client{Transport: apitest.ValidatingTransport(e.t, nil), Timeout: 30 * time.Second}
	// The API's own answers (429s, 503s) are what these tests check.
	opts := []client.ClientOption{client.WithHTTPClient(hc), client.WithoutRetries()}
	if tok != "" {
		opts = append(opts, client.WithBearerToken(tok))
	}
	c, err := client.NewClientWithResponses(e.url, opts...)
	require.NoError(e.t, err)
	return c
}

// user is a client for sub in tenant acme with roles.
func (e *env) user(sub string, roles ...string) *client.ClientWithResponses {
	return e.as(e.token("acme", sub, roles...))
}

func (e *env) admin() *client.ClientWithResponses      { return e.user("root", "admin") }
func (e *env) dispatcher() *client.ClientWithResponses { return e.user("head", "dispatcher") }

// raw sends a request with a raw body through the validating transport.
func (e *env) raw(method, path, tok, contentType, body string) (*http.Response, []byte) {
	e.t.Helper()
	return e.rawWithHeaders(method, path, tok, body, map[string]string{"Content-Type": contentType})
}

// rawWithHeaders is raw with more request headers (empty values are skipped).
func (e *env) rawWithHeaders(method, path, tok, body string, headers map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	require.NoError(e.t, err)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	hc := &http.Client{Transport: apitest.ValidatingTransport(e.t, nil)}
	resp, err := hc.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp, b
}

func ptr[T any](v T) *T { return &v }

// requireProblem checks a problem answer's status and code.
func requireProblem(t testing.TB, p *client.Problem, status int, code client.ProblemCode) {
	t.Helper()
	require.NotNil(t, p, "expected a %d %s problem", status, code)
	require.Equal(t, status, p.Status)
	require.Equal(t, code, p.Code)
	require.NotEmpty(t, p.Title)
	require.NotEmpty(t, p.Type)
}

// mustCreate creates a node with the dispatcher and returns it.
func (e *env) mustCreate(body client.NodeCreate) client.Node {
	e.t.Helper()
	res, err := e.dispatcher().CreateNodeWithResponse(context.Background(), nil, body)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusCreated, res.StatusCode(), string(res.Body))
	return *res.JSON201
}

func task(id string) client.NodeCreate {
	return client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("default")}
}
