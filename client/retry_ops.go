package client

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// opKind is what a retry may assume of a call: whether sending it twice
// does what sending it once does.
type opKind int

const (
	// opOnce: a write that a second try could repeat (complete, fail,
	// extend, patch, delete, ...). Retried only when the server
	// surely did not act: a 429, or no connection made.
	opOnce opKind = iota
	// opRepeatable: a read, or a write whose repeat changes nothing more.
	opRepeatable
	// opKeyed: a create or a claim-next, which the client sends with an
	// Idempotency-Key, so that the server replays a repeat's answer.
	opKeyed
	// opFencedRelease: a release, repeatable when it carries a fence
	// (releaseKind decides from its body).
	opFencedRelease
)

func (k opKind) repeatable() bool { return k == opRepeatable || k == opKeyed }

// classify tells which kind of call req is. base is the escaped path of the
// server URL, which the API's paths follow.
//
// Repeatable writes, by the API's own terms (openapi.yaml):
//   - renewLease: sets expires to now + ttl_ms of the caller's lease; a
//     repeat renews the same lease again, and with a fence only that lease.
//   - claimNode: re-claiming your own live claim renews it (same fence, same
//     edge, no attempt counted).
//   - releaseNode with a fence: a repeat after the release finds no live
//     lease of that fence and changes nothing (lease_lost at worst).
//   - heartbeatWorker: records the worker's current status.
//   - ackMessage: acknowledging a message already read answers it unchanged.
//   - createNode, createNodesBatch: a repeated Idempotency-Key replays the
//     first answer and creates nothing.
//   - claimNext, claimNextMany: a repeated Idempotency-Key answers the
//     claims the first request made that are still held, and claims nothing.
func classify(req *http.Request, base string) opKind {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return opRepeatable
	case http.MethodPost:
	default:
		return opOnce
	}
	rel, ok := strings.CutPrefix(req.URL.EscapedPath(), base+"/")
	if !ok {
		return opOnce
	}
	seg := strings.Split(rel, "/")
	switch {
	case len(seg) == 2 && seg[0] == "v1" && seg[1] == "nodes",
		len(seg) == 3 && seg[0] == "v1" && seg[1] == "nodes" && seg[2] == "batch":
		return opKeyed
	case len(seg) == 4 && seg[0] == "v1" && seg[1] == "queues" && (seg[3] == "claim" || seg[3] == "claims"):
		return opKeyed
	case len(seg) == 4 && seg[0] == "v1" && seg[1] == "nodes":
		switch seg[3] {
		case "renew", "claim":
			return opRepeatable
		case "release":
			return opFencedRelease
		}
	case len(seg) == 3 && seg[0] == "v1" && seg[1] == "workers" && seg[2] == "heartbeat",
		len(seg) == 4 && seg[0] == "v1" && seg[1] == "inbox" && seg[3] == "ack":
		return opRepeatable
	}
	return opOnce
}

// releaseKind is opRepeatable for a release that names its lease's fence,
// and opOnce for one that does not (it acts on whatever live lease the
// caller holds then, or a dispatcher on anyone's).
func releaseKind(req *http.Request) opKind {
	if req.GetBody == nil {
		return opOnce
	}
	body, err := req.GetBody()
	if err != nil {
		return opOnce
	}
	defer body.Close()
	var r struct {
		Fence *int64 `json:"fence"`
	}
	if json.NewDecoder(io.LimitReader(body, 1<<20)).Decode(&r) != nil || r.Fence == nil {
		return opOnce
	}
	return opRepeatable
}

// basePath is the escaped path of the server URL without its trailing
// slash ("" for a server at the root).
func basePath(server string) string {
	u, err := url.Parse(server)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(u.EscapedPath(), "/")
}
