package apitest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that records Errorf instead of failing the test.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

func (r *recorder) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

const (
	jsonType    = "application/json"
	problemType = "application/problem+json"
	edgeJSON    = `{"from":"a","type":"depends_on","to":"b","props":{},"created_by":"head",` +
		`"created_at":"2026-02-12T10:11:12.123Z","retired_at":null}`
)

// cannedServer answers a few routes with right and wrong shapes.
func cannedServer(t *testing.T) *httptest.Server {
	reply := func(w http.ResponseWriter, status int, contentType, body string) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, jsonType, `{"status":"ok","version":"dev"}`)
	})
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, jsonType, `{"status":"up","since":1}`) // wrong: enum and extra member
	})
	mux.HandleFunc("GET /v1/tenant", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusTeapot, problemType, `{"type":"about:blank","title":"teapot","status":418,"code":"internal"}`)
	})
	mux.HandleFunc("GET /v1/nodes/{id}", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusNotFound, jsonType, `{"error":"not found"}`) // wrong: not a problem document
	})
	mux.HandleFunc("DELETE /v1/nodes/{id}", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusConflict, problemType, `{"type":"about:blank","title":"Conflict","status":409,`+
			`"code":"conflict","holder":"alice","expires":1770865872000,"expires_at":"2026-02-12T03:11:12.000Z"}`)
	})
	mux.HandleFunc("GET /v1/leases", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "soon") // wrong: not an integer
		reply(w, http.StatusTooManyRequests, problemType, `{"type":"about:blank","title":"Too Many Requests","status":429,"code":"rate_limited"}`)
	})
	mux.HandleFunc("POST /v1/edges", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusCreated, jsonType, edgeJSON)
	})
	mux.HandleFunc("GET /v1/not-in-spec", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, jsonType, `{}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestValidatingTransport(t *testing.T) {
	t.Parallel()
	srv := cannedServer(t)

	tests := []struct {
		name     string
		method   string
		path     string
		body     string
		validate bool   // ask for request validation
		wantFail string // "" when the exchange matches the spec
		wantBody string
	}{
		{name: "health matches", method: "GET", path: "/health", wantBody: `{"status":"ok","version":"dev"}`},
		{name: "wrong shape", method: "GET", path: "/ready", wantFail: "response does not match the spec: GET /ready → 200", wantBody: `{"status":"up","since":1}`},
		{name: "undocumented status", method: "GET", path: "/v1/tenant", wantFail: "status is not supported"},
		{name: "error that is not a problem", method: "GET", path: "/v1/nodes/x", wantFail: "GET /v1/nodes/x → 404"},
		{name: "problem with extension members", method: "DELETE", path: "/v1/nodes/identity:alice"},
		{name: "bad header", method: "GET", path: "/v1/leases", wantFail: `Retry-After`},
		{name: "unknown route rejected", method: "GET", path: "/v1/nowhere"},
		{name: "unknown route served", method: "GET", path: "/v1/not-in-spec", wantFail: "no such operation in the spec"},
		{name: "bad request not validated", method: "POST", path: "/v1/edges", body: `{"from":"a","typo":1}`, wantBody: edgeJSON},
		{name: "bad request validated", method: "POST", path: "/v1/edges", body: `{"from":"a","typo":1}`, validate: true, wantFail: "request does not match the spec: POST /v1/edges", wantBody: edgeJSON},
		{name: "good request validated", method: "POST", path: "/v1/edges", body: `{"from":"a","type":"depends_on","to":"b"}`, validate: true, wantBody: edgeJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{TB: t}
			hc := &http.Client{Transport: ValidatingTransport(rec, nil)}

			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+tt.path, body)
			require.NoError(t, err)
			if tt.body != "" {
				req.Header.Set("Content-Type", jsonType)
			}
			if tt.validate {
				req.Header.Set(ValidateRequestHeader, "1")
			}
			resp, err := hc.Do(req)
			require.NoError(t, err)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())

			if tt.wantBody != "" {
				require.Equal(t, tt.wantBody, string(got), "the caller reads the body intact")
			}
			failures := rec.failures()
			for _, f := range failures {
				t.Log(f)
			}
			if tt.wantFail == "" {
				require.Empty(t, failures)
				return
			}
			require.Len(t, failures, 1, "one report per exchange")
			require.Contains(t, failures[0], tt.wantFail)
		})
	}
}

func TestValidatingTransportConcurrent(t *testing.T) {
	t.Parallel()
	srv := cannedServer(t)
	rec := &recorder{TB: t}
	hc := &http.Client{Transport: ValidatingTransport(rec, nil)}

	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 10 {
				resp, err := hc.Get(srv.URL + "/ready")
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
	wg.Wait()
	require.Len(t, rec.failures(), 160)
}
