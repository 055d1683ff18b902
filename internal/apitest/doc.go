// Package apitest holds what API tests need to keep the server honest to
// openapi.yaml: LoadSpec reads the spec, and ValidatingTransport checks
// every response that passes through it against the spec (and, on request,
// the request too), reporting mismatches as test errors.
//
// Invariants:
//   - A response is validated in full: status (an undocumented one is a
//     failure), declared headers, content type and body. A route the spec does
//     not know is a failure unless the server answered it 404 or 405.
//   - Requests are validated only when they carry X-Apitest-Validate-Request: 1,
//     because tests deliberately send bad requests to check the server's 400s.
//   - The caller always gets the response body back intact, and mismatches never
//     change what the caller sees: they are reported with t.Errorf only.
//   - Authentication is never validated here; the server's own tests cover it.
package apitest
