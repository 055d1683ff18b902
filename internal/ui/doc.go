// Package ui is the operator dashboard served at /ui/: plain HTML, CSS and
// JavaScript modules embedded in the binary, with no build step.
//
// Invariants:
//   - The page is a client of the public API and nothing else: every number
//     it shows and every action it takes is a /v1 request made with the
//     token the operator enters, so the API's roles decide what it may do
//     and its problem documents are what a refusal shows.
//   - The token lives in the tab's sessionStorage and travels only in the
//     Authorization header, never in a URL: the live event stream is read
//     with fetch() and a streaming body reader, because EventSource cannot
//     send a header.
//   - Every file is served with a Content-Security-Policy that allows only
//     this origin's scripts, styles and connections (no inline script, no
//     eval, no framing), so the page runs no code but its own.
//   - Serving needs no authentication: the files hold no data.
package ui
