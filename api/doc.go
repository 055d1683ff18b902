// Package api is the HTTP face of Tether: Echo handlers, middleware (request
// ids, access logs, metrics, authentication, rate limits, body limits),
// problem+json errors, and the embedded openapi.yaml and skill.md.
//
// Invariants:
//   - Handlers are thin: decode, call a domain package, encode.
//   - Domain errors become HTTP in exactly one place (problemFor); an error of
//     no known kind is logged and answered with a generic 500, so internal
//     text never reaches a client.
//   - Request bodies are decoded strictly: unknown fields and trailing data are
//     400, bodies over the limit 413, and a rejected request changes nothing.
//   - The caller's identity is the authenticated principal, never a request
//     argument, and every query is confined to the principal's tenant.
//   - openapi.yaml describes every route and response; the API tests validate
//     each response against it.
package api
