package api

import "github.com/tether-run/tether/internal/testsignal"

// TestSignals are the API server's signals to tests.
type TestSignals struct {
	// Waiting carries the subject of each request that begins to wait (a
	// long poll, an event stream, an MCP session or stream) once it holds
	// its place among its identity's waits: it has reached the server.
	Waiting testsignal.Signal[string]
	// Served carries each request once it is answered, counted in the
	// metrics and, when the access log says so, logged.
	Served testsignal.Signal[Served]
}

// Served is a request as the edge saw it end.
type Served struct {
	Method, Route string
	Status        int // StatusClientGone when the client went away
}
