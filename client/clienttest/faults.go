package clienttest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// FaultMode is what a FaultProxy does with a request it fails.
type FaultMode int

const (
	// Refuse answers without passing the request on: the server never
	// sees it.
	Refuse FaultMode = iota
	// LoseAnswer passes the request on and answers in place of the
	// server: the server acted, and its caller cannot know.
	LoseAnswer
)

// FaultProxy is a reverse proxy in front of a server that fails the next
// requests of one method and path with a status (and Retry-After: 0), then
// passes every request through: a server that answers 503 twice and then
// succeeds, to test a client's retries against.
type FaultProxy struct {
	// URL is the proxy's base URL; call it in place of the server's.
	URL string

	mu     sync.Mutex
	method string
	path   string
	status int
	mode   FaultMode
	fails  int
	keys   []string
}

// NewFaultProxy starts a FaultProxy in front of target (a base URL), closed
// when t ends. It fails nothing until FailNext.
func NewFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("clienttest: bad target %q: %v", target, err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &FaultProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, mode, fail := p.take(r)
		if !fail {
			rp.ServeHTTP(w, r)
			return
		}
		if mode == LoseAnswer {
			rp.ServeHTTP(httptest.NewRecorder(), r)
		}
		code := "unavailable"
		if status == http.StatusTooManyRequests {
			code = "rate_limited"
		}
		w.Header().Set("Retry-After", "0")
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, `{"type":"urn:tether:problem:%s","title":%q,"status":%d,"code":%q,"detail":"injected by clienttest.FaultProxy"}`,
			code, http.StatusText(status), status, code)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// FailNext makes the next n requests of method to path (the URL's path, as
// "/v1/nodes") fail with status, as mode says, and forgets what Seen held.
func (p *FaultProxy) FailNext(n, status int, mode FaultMode, method, path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.method, p.path, p.status, p.mode, p.fails, p.keys = method, path, status, mode, n, nil
}

// Seen is the Idempotency-Key header ("" when absent) of every request of
// FailNext's method and path since then, failed or passed through.
func (p *FaultProxy) Seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.keys...)
}

// take records r and tells whether to fail it, with what.
func (p *FaultProxy) take(r *http.Request) (status int, mode FaultMode, fail bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Method != p.method || r.URL.Path != p.path {
		return 0, 0, false
	}
	p.keys = append(p.keys, r.Header.Get("Idempotency-Key"))
	if p.fails == 0 {
		return 0, 0, false
	}
	p.fails--
	return p.status, p.mode, true
}
