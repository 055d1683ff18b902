package main

// The lease calls of the linearizability tests, made with the generated
// client and reduced to what the model checks; and the frozen client, a
// separate process (this test binary, re-executed) so that it can be
// SIGSTOPped while it holds a lease.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/linearize"
)

// callLease sends in and reduces the answer to a linearize.Output. A call
// that got no answer is Unknown with a nil error; an answer the contract does
// not allow for these calls (400, 404, 500, ...) is Unknown with an error.
func callLease(ctx context.Context, c *client.ClientWithResponses, in linearize.Input) (linearize.Output, error) {
	unknown := linearize.Output{Result: linearize.Unknown}
	var fence *int64
	if in.Fence != 0 {
		fence = ptr(int64(in.Fence))
	}
	var (
		status int
		hr     *http.Response
		body   []byte
		ok     linearize.Output // the 200 answer, when it decoded
	)
	switch in.Kind {
	case linearize.Claim:
		res, err := c.ClaimNodeWithResponse(ctx, in.Node, client.ClaimRequest{TTLMS: ptr(in.TTL.Milliseconds())})
		if err != nil {
			return unknown, nil
		}
		status, hr, body = res.StatusCode(), res.HTTPResponse, res.Body
		if r := res.JSON200; r != nil {
			ok = linearize.Output{Status: string(r.Status), Holder: r.Lease.By, Fence: uint64(r.Lease.Fence), Renewed: r.Renewed, Attempts: r.Node.Attempts, Expires: r.Lease.Expires}
		}
	case linearize.Renew:
		res, err := c.RenewLeaseWithResponse(ctx, in.Node, client.RenewRequest{Fence: fence})
		if err != nil {
			return unknown, nil
		}
		status, hr, body = res.StatusCode(), res.HTTPResponse, res.Body
		if r := res.JSON200; r != nil {
			ok = linearize.Output{Holder: r.Lease.By, Fence: uint64(r.Lease.Fence), Expires: r.Lease.Expires}
		}
	case linearize.Release:
		res, err := c.ReleaseNodeWithResponse(ctx, in.Node, client.ReleaseRequest{Fence: fence})
		if err != nil {
			return unknown, nil
		}
		status, hr, body = res.StatusCode(), res.HTTPResponse, res.Body
		if r := res.JSON200; r != nil {
			ok = linearize.Output{Status: string(r.Status)}
		}
	case linearize.Complete:
		res, err := c.CompleteNodeWithResponse(ctx, in.Node, client.CompleteRequest{Fence: fence})
		if err != nil {
			return unknown, nil
		}
		status, hr, body = res.StatusCode(), res.HTTPResponse, res.Body
		if r := res.JSON200; r != nil {
			ok = linearize.Output{Status: string(r.Status)}
		}
	case linearize.Read:
		res, err := c.GetNodeWithResponse(ctx, in.Node)
		if err != nil {
			return unknown, nil
		}
		status, hr, body = res.StatusCode(), res.HTTPResponse, res.Body
		if n := res.JSON200; n != nil {
			ok = linearize.Output{Status: string(n.Status), Attempts: n.Attempts}
			if n.Lease != nil {
				ok.Holder, ok.Fence, ok.Expires = n.Lease.By, uint64(n.Lease.Fence), n.Lease.Expires
			}
		}
	default:
		return unknown, fmt.Errorf("no such call %v", in.Kind)
	}
	switch status {
	case http.StatusOK:
		if ok == (linearize.Output{}) {
			return unknown, fmt.Errorf("%v %s: 200 without the expected body: %s", in.Kind, in.Node, body)
		}
		ok.Result = linearize.OK
		return ok, nil
	case http.StatusConflict:
		p := client.ProblemFrom(hr, body)
		if p == nil {
			return unknown, fmt.Errorf("%v %s: 409 without a problem document: %s", in.Kind, in.Node, body)
		}
		out := linearize.Output{}
		switch p.Code {
		case "conflict":
			out.Result = linearize.Conflict
		case "lease_lost":
			out.Result = linearize.LeaseLost
		case "not_claimable":
			return linearize.Output{Result: linearize.NotClaimable}, nil
		default:
			return unknown, fmt.Errorf("%v %s: 409 %s: %s", in.Kind, in.Node, p.Code, body)
		}
		if p.Holder != nil {
			out.Holder = *p.Holder
		}
		return out, nil
	}
	return unknown, fmt.Errorf("%v %s: unexpected %d: %s", in.Kind, in.Node, status, body)
}

// The frozen client's settings, passed by the test in its environment.
const (
	frozenEnv      = "TETHER_LINEARIZE_FROZEN_CLIENT" // set: this process is the frozen client
	frozenURLEnv   = "TETHER_LINEARIZE_URL"
	frozenTokenEnv = "TETHER_LINEARIZE_TOKEN"
	frozenNodeEnv  = "TETHER_LINEARIZE_NODE"
	frozenTTLEnv   = "TETHER_LINEARIZE_TTL_MS"
)

// frozenLine is one line the frozen client writes on stdout: first its
// claim's fence, at the end every call it made.
type frozenLine struct {
	Claimed uint64         `json:"claimed,omitempty"`
	Ops     []linearize.Op `json:"ops,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// frozenIdentity is the frozen client's token subject.
const frozenIdentity = "frozen"

// runFrozenClient is the frozen client (TestMain runs it instead of the tests
// when frozenEnv is set). It claims the node and heartbeats; the test
// SIGSTOPs it past its TTL and lets another identity take the node. Once
// resumed, its heartbeat is refused, and it then does what a careless worker
// does: tries to finish its run anyway with the fence it still has. It
// reports every call it made.
func runFrozenClient() int {
	out := json.NewEncoder(os.Stdout)
	fail := func(format string, args ...any) int {
		_ = out.Encode(frozenLine{Error: fmt.Sprintf(format, args...)})
		return 1
	}
	var ttl time.Duration
	if _, err := fmt.Sscan(os.Getenv(frozenTTLEnv), &ttl); err != nil {
		return fail("bad %s: %v", frozenTTLEnv, err)
	}
	ttl *= time.Millisecond
	node := os.Getenv(frozenNodeEnv)
	hc := &http.Client{Timeout: 10 * time.Second}
	c, err := client.NewClientWithResponses(os.Getenv(frozenURLEnv), client.WithHTTPClient(hc), client.WithBearerToken(os.Getenv(frozenTokenEnv)),
		// The history records each call as the server answered it.
		client.WithoutRetries())
	if err != nil {
		return fail("error making a client: %v", err)
	}
	ctx := context.Background()
	var ops []linearize.Op
	call := func(in linearize.Input) linearize.Output {
		in.Node, in.Client = node, frozenIdentity
		op := linearize.Op{Input: in, Call: linearize.Now()}
		o, err := callLease(ctx, c, in)
		op.Output, op.Return = o, linearize.Now()
		ops = append(ops, op)
		if err != nil {
			_ = out.Encode(frozenLine{Error: err.Error()})
		}
		return o
	}

	claim := call(linearize.Input{Kind: linearize.Claim, TTL: ttl})
	if claim.Result != linearize.OK {
		return fail("claim: %v", claim.Result)
	}
	if err := out.Encode(frozenLine{Claimed: claim.Fence}); err != nil {
		return 1
	}
	// Heartbeat at a fifth of the TTL until the lease is refused (the test
	// freezes this process meanwhile).
	for deadline := time.Now().Add(time.Minute); ; {
		if call(linearize.Input{Kind: linearize.Renew, Fence: claim.Fence}).Result != linearize.OK {
			break
		}
		if time.Now().After(deadline) {
			return fail("the lease was never refused")
		}
		time.Sleep(ttl / 5)
	}
	// The lease is gone. Every write with the old fence must be refused.
	call(linearize.Input{Kind: linearize.Complete, Fence: claim.Fence})
	call(linearize.Input{Kind: linearize.Release, Fence: claim.Fence})
	call(linearize.Input{Kind: linearize.Renew, Fence: claim.Fence})
	call(linearize.Input{Kind: linearize.Complete})
	call(linearize.Input{Kind: linearize.Release})
	call(linearize.Input{Kind: linearize.Read})
	if err := out.Encode(frozenLine{Ops: ops}); err != nil {
		return 1
	}
	return 0
}

// readFrozenLines sends each line the frozen client writes to lines, and
// closes it at the end of its output.
func readFrozenLines(sc *bufio.Scanner, lines chan<- frozenLine) {
	defer close(lines)
	for sc.Scan() {
		var l frozenLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			l.Error = fmt.Sprintf("unreadable line %q: %v", sc.Text(), err)
		}
		lines <- l
	}
}
