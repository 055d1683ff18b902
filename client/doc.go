// Package client is the Go SDK of the Tether HTTP API, generated from
// openapi.yaml by oapi-codegen (models.gen.go and client.gen.go; run `go generate
// ./client/` after changing the spec) around a few hand-written pieces.
//
// Make a client with a base URL and a bearer token:
//
//	c, err := client.NewClientWithResponses("http://127.0.0.1:36725",
//		client.WithBearerToken(token),
//		client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
//
// Every operation has a method on ClientWithResponses named after its
// operationId (GetNodeWithResponse, ClaimNodeWithResponse, ...) that returns
// the raw *http.Response and body together with the decoded body of the
// status that came back: JSON200 / JSON201 for success, and
// ApplicationProblemJSON4xx / 5xx (each a *Problem) for errors. An error
// status is not a Go error; CheckResponse makes it one:
//
//	res, err := c.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{})
//	if err != nil {
//		return err // transport failure
//	}
//	if err := client.CheckResponse(res.HTTPResponse, res.Body); err != nil {
//		return err // a *Problem
//	}
//	lease := res.JSON200.Lease
//
// and switch on the stable problem code with IsCode(err,
// client.ProblemCodeLeaseLost) or errors.As(err, &problem).
//
// The client retries by itself what is safe to send again (RetryPolicy,
// retry.go): a 429 or a connection never made for every call, and a 503 or a
// lost connection for reads, renewals, claims of a node by id, fenced
// releases, heartbeats, acknowledgements, and creates and claims of a
// queue's next nodes (which it sends with an Idempotency-Key of its own
// making, unless the caller set one, so that the server answers a repeat
// with what the first try did). A caller gives a claim its own key with a
// RequestEditorFn that sets the Idempotency-Key header. It waits a jittered, doubling backoff or the server's Retry-After,
// both capped, and at most four tries in all; WithRetries tunes it and
// WithoutRetries turns it off.
//
// Merge patches (NodePatch, PolicyPatch) use Nullable members, which tell
// "leave alone" (the zero value) from "clear" (Null) and "set" (Value):
//
//	client.NodePatch{Title: client.Value("retitled"), RunAt: client.Null[time.Time]()}
//
// Invariants: nothing in models.gen.go or client.gen.go is edited by hand; Problem, Nullable,
// WithBearerToken and the retry policy are the hand-written parts the generated code refers to
// (see oapi-codegen.yaml, oapi-codegen-client.yaml and overlay.yaml), and none of them changes the wire
// format the spec describes.
package client
