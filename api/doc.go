// Package api is the HTTP face of Tether: Echo handlers, middleware (request
// ids, access logs, metrics, authentication, rate limits, body limits),
// problem+json errors, and the embedded openapi.yaml and skill.md.
//
// Invariants:
//   - Handlers are thin: decode, call a domain package, encode. No handler
//     runs storage itself: none starts goroutines, opens a durability
//     barrier or recovers a panic (the middleware recovers a handler's).
//     POST /v1/batch reads each op with its single endpoint's request
//     reader, calls nodes.Service.Batch, and turns each result into its
//     entry (batchItem) with its endpoint's answer builder, so a batched op
//     answers exactly as its endpoint would.
//   - Domain errors become HTTP in exactly one place (problemFor), a batch
//     op's error included (through batchItem); an error of no known kind is
//     logged and answered with a generic 500, so internal text never
//     reaches a client.
//   - Request bodies are decoded strictly: unknown fields and trailing data are
//     400, bodies over the limit 413, and a rejected request changes nothing.
//   - A handler that takes a JSON body reads it with Server.readBody and
//     decodes it with decodeStrict; a handler added later gets every rule
//     below by doing the same, and must not read the body another way.
//     readBody answers 415 for a body that is not JSON (a missing
//     Content-Type is read as JSON; an empty body needs none) and refuses,
//     for the whole body at any depth (free-form props, result, meta and
//     batch ops included), invalid UTF-8 and unpaired surrogate escapes,
//     nesting deeper than maxJSONDepth (64), and a key twice in one object.
//     Domain decoders of merge patches run on what readBody returned.
//   - decodeStrict holds every millisecond field (a member named ms or
//     ending in _ms, at any depth of the struct it fills) to its one range
//     in internal/duration, so a handler never range-checks a duration
//     itself and converts with duration.FromMS (msOf), which cannot wrap.
//     A new _ms field needs no code: it gets its name's range, or [0,
//     duration.MaxMS]; a query parameter in milliseconds uses
//     duration.Check (see waitParam).
//   - Requests that wait (wait_ms > 0, event streams) hold a place counted
//     per identity and per tenant (WaitLimits) for as long as they wait; a
//     new waiting endpoint takes one with s.waiters.acquire, which tells a
//     test the request has arrived (TestSignals.Waiting); the edge tells it
//     each request answered, counted and logged (TestSignals.Served).
//   - The caller's identity is the authenticated principal, never a request
//     argument, and every query is confined to the principal's tenant.
//   - /metrics names no tenant and no queue to an anonymous scrape: series
//     labelled by tenant or queue are registered in metrics.tenants, which
//     only a scrape token (Scrapers) or the metrics listener
//     (MetricsListener) reads. Every label value is bounded: routes are
//     templates, methods HTTP's nine or "other", queues and tenants capped
//     (package queuemetrics).
//   - openapi.yaml describes every route and response; the API tests validate
//     each response against it.
//   - The hot answers (node, lease, edge, claim, completion, renew, the claims
//     list, batch results) are written by appenders whose bytes equal
//     encoding/json's for the same value (encode_test.go compares the two).
//     Those of the node, lease and edge are generated from their DTOs
//     (encode_gen.go, cmd/tether-appendgen), so a field added to one needs
//     no appender line; the others are written by hand (encode.go), and a
//     field added to one is added to its appender too. node_shape_test.go
//     holds the node DTO to the stored node and to openapi.yaml. The hot request bodies (decode_fast.go) and batch ops
//     (batch_split.go) have fast paths that leave every unusual input to
//     encoding/json, so values and errors are the decoder's either way.
package api
