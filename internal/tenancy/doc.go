// Package tenancy owns tenants, their policies, identities and roles, and
// authentication: JWTs (HS256 secrets and RS256/ES256/ES384/ES512/EdDSA public
// keys), API keys, and the static tokens of the OpenClaw Spine environment
// (a compatibility layer: legacySeedSubjects in static.go).
//
// Invariants:
//   - A request is authenticated by exactly one credential and yields one
//     Principal: a tenant, a subject (which passes graphstore.ValidSubject) and a
//     role. No subject starts with a prefix the API gives meaning to
//     ("node:", "identity:", "schedule:"), so no caller passes for a node's
//     holder, an identity node or a schedule: a JWT with one is refused, an
//     API key is neither made for one nor, if an older server made it,
//     accepted, and the static tokens' subjects are fixed names. Every
//     failure to authenticate is a *fault.Unauthorized whose reason is
//     short, fixed text (never a library's or the store's error).
//   - The accepted JWT algorithms are pinned: HS256 for the configured
//     secrets, and for a public key exactly the algorithm of its key type,
//     chosen by the token's kid. "none" and every other algorithm is refused.
//     A token without a kid is checked against the secrets only.
//   - A JWT that passed verification is remembered, keyed by its SHA-256, until
//     its exp and not an instant longer; a failure is never remembered. The
//     keys, issuer and audience are read once, when the Service is made, and
//     the cache belongs to them: a Service made with other keys starts empty,
//     so a token signed by a removed key is refused at once.
//   - An API key is tether.<tenant>.<keyid>.<secret>. Only the SHA-256 of the
//     secret is stored, under the tenant's keys; it is compared in constant
//     time and looked up on every request, so a deleted key fails at once.
//   - A caller never grants a role above its own.
//   - A tenant comes into being with the first valid token that names it; its
//     record is written once, and afterwards authentication does no write.
//   - A tenant's effective policy is the server defaults overlaid by the
//     tenant's stored overrides; a patch is validated on the effective result
//     and is durable. The in-memory policy cache is written only on the store's
//     writer goroutine after a commit (or with LoadOrStore by readers), so it
//     never holds a policy older than the last committed patch.
//   - Rate limiting is a token bucket per (tenant, subject) in memory; idle
//     buckets are dropped, so memory follows the number of active identities.
//
// Roles form a chain, each including the ones before it:
//
//	reader < worker < dispatcher < admin
package tenancy
