// Package clienttest runs a real Tether in-process for a Go program's
// tests, as River's rivertest does for River: New starts the server every
// `tether serve` runs (its store, services and HTTP API) on a temporary
// directory and a free loopback port, on a fake clock the test moves, with
// tokens minted for it and a ready generated client — so runner handlers,
// workers and anything else that speaks the API are tested without a
// server binary.
//
//	srv := clienttest.New(t, nil)
//	c := srv.ClientFor("acme", "worker-1", "worker")
//	... // claim, renew, complete through c
//	srv.Advance(10 * time.Minute) // every lease the test left running expires
//
// NewFaultProxy puts a proxy in front of it that fails the next calls of one
// path with a 503 or a 429, before the server sees them or after it acted,
// to test how a program rides out a server that is briefly unavailable:
//
//	p := clienttest.NewFaultProxy(t, srv.URL)
//	p.FailNext(2, http.StatusServiceUnavailable, clienttest.LoseAnswer, "POST", "/v1/nodes")
//	... // a client of p.URL; p.Seen() lists each try's Idempotency-Key
//
// Invariants:
//   - Each Server is its own: its own directory (or memory), port, clock and
//     tokens; tests using it may run in parallel.
//   - The server is shut down when the test ends, and its shutdown must
//     succeed (a request left hanging fails the test).
//   - Time decides lease expiry, delays and retry backoff only through the
//     fake clock: nothing expires until the test calls Advance, however
//     slow the machine. With Options.WallClock it is the wall clock.
//   - Tokens are HS256 JWTs valid for a day of the server's clock; the
//     server accepts no others, so a test's credentials work only on its
//     own server.
package clienttest
