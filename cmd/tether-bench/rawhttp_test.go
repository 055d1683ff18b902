package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRawClient drives the harness's own client against net/http's server
// with every answer shape it has to read, and compares it with net/http's
// client on the same requests.
func TestRawClient(t *testing.T) {
	var conns atomic.Int64
	big := strings.Repeat("x", 70<<10) // more than the server buffers: chunked
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(append([]byte(r.Method+" "+r.Header.Get("Authorization")+" "), b...))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) })
	mux.HandleFunc("/none", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	mux.HandleFunc("/problem", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"code":"lease_held"}`)
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	for _, mode := range []string{clientRaw, clientGo} {
		t.Run(mode, func(t *testing.T) {
			cs := newClients(mode == clientRaw, 4)
			defer cs.closeAll()
			c := newCaller(srv.URL, "tok", cs)
			check := func(method, path string, body []byte, wantStatus int, want string) {
				t.Helper()
				st, b, err := c.do(method, path, body)
				if err != nil || st != wantStatus || string(b) != want {
					t.Fatalf("%s %s: %d %.80q %v; want %d %.80q", method, path, st, b, err, wantStatus, want)
				}
			}
			before := conns.Load()
			check("POST", "/echo", []byte(`{"a":1}`), 200, `POST Bearer tok {"a":1}`)
			check("GET", "/echo", nil, 200, `GET Bearer tok `)
			check("GET", "/big", nil, 200, big)
			check("POST", "/none", []byte(`{}`), 204, "")
			check("POST", "/problem", []byte(`{}`), 409, `{"code":"lease_held"}`)
			if n := conns.Load() - before; n != 1 {
				t.Fatalf("%d connections for five requests, want 1 kept alive", n)
			}
			check("GET", "/close", nil, 200, "bye")
			check("GET", "/echo", nil, 200, "GET Bearer tok ")
			if n := conns.Load() - before; n != 2 {
				t.Fatalf("%d connections after a Connection: close, want 2", n)
			}
			// The server drops the idle connection: a GET is sent again on a
			// new one, and the connection is kept alive after it.
			srv.CloseClientConnections()
			check("GET", "/echo", nil, 200, "GET Bearer tok ")
			check("POST", "/echo", []byte(`{}`), 200, `POST Bearer tok {}`)
			if n := conns.Load() - before; n != 3 {
				t.Fatalf("%d connections after the server closed one, want 3", n)
			}
		})
	}
}
