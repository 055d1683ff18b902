// Package testserver starts a real Tether server for tests: a real store in
// a temporary directory (or in memory), served on a free loopback port, on a
// fake clock that decides lease expiry, with tokens minted for it. It is the
// one harness the internal tests share (API, dashboard, MCP), each adding its
// own clients on top, and the base of the public kit, client/clienttest,
// which starts servers from the same configuration (ConfigIn) for the
// client's and the runner's tests and for users' tests: tests that need the
// server's internals use this package, the others the kit.
//
// Invariants:
//   - A started server is shut down when its test ends (Start), or by the
//     test itself (Open), and its shutdown must succeed.
//   - Tokens are HS256 JWTs signed with Secret, valid for an hour of the
//     server's clock (the wall clock when the server has none).
package testserver
