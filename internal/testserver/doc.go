// Package testserver starts a real Tether server for tests: a real store in
// a temporary directory (or in memory), served on a free loopback port, on a
// fake clock that decides lease expiry, with tokens minted for it. It is the
// one harness the API, client, dashboard and MCP tests share; each adds its
// own clients on top.
//
// Invariants:
//   - A started server is shut down when its test ends (Start), or by the
//     test itself (Open), and its shutdown must succeed.
//   - Tokens are HS256 JWTs signed with Secret, valid for an hour of the
//     server's clock (the wall clock when the server has none).
package testserver
