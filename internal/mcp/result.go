package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tether-run/tether/client"
)

// toolError is the structured content of a failed tool call: the API's
// problem document (its members, as the API sent them) and a hint saying
// what the agent should do next.
type toolError struct {
	*client.Problem
	Hint string `json:"hint"`
}

// failure is a tool error (IsError) carrying the problem's code and a hint,
// never a protocol error: the agent reads it and decides. An error that is
// not a problem (the server is unreachable) is reported with the code
// unavailable.
func failure(err error) *sdk.CallToolResult {
	var p *client.Problem
	if !errors.As(err, &p) {
		p = &client.Problem{
			Status: http.StatusServiceUnavailable, Code: client.ProblemCodeUnavailable,
			Title: "the Tether server did not answer", Detail: err.Error(),
		}
	}
	if p.Type == "" {
		// A problem made here (bad input, an unreachable server) has the
		// type the API gives one of its code.
		typed := *p
		typed.Type = problemType + string(p.Code)
		p = &typed
	}
	te := toolError{Problem: p, Hint: hint(p)}
	b, mErr := json.Marshal(te)
	if mErr != nil {
		b = []byte(fmt.Sprintf(`{"code":%q,"hint":%q}`, p.Code, te.Hint))
	}
	return &sdk.CallToolResult{
		IsError:           true,
		Content:           []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("%s\nhint: %s\n%s", p.Error(), te.Hint, b)}},
		StructuredContent: json.RawMessage(b),
	}
}

// problemType prefixes a problem's code in its type, as the API's do.
const problemType = "urn:tether:problem:"

// badInput is the tool error of an argument refused before any call.
func badInput(field, detail string) *sdk.CallToolResult {
	return failure(&client.Problem{
		Status: http.StatusBadRequest, Code: client.ProblemCodeBadRequest,
		Title: "bad request", Detail: detail, Field: field,
	})
}

// hint is what an agent should do about p.
func hint(p *client.Problem) string {
	switch p.Code {
	case client.ProblemCodeLeaseLost:
		return "You do not hold this node (your lease lapsed or ended, the fence is stale, or holder has it): stop working on it and call claim_next for new work."
	case client.ProblemCodeConflict:
		return "Someone else holds this node, or its state does not allow this: call get_node to see its status and holder, and do not retry blindly."
	case client.ProblemCodeNotClaimable:
		return "The node cannot be claimed now (see reason, blocked_by, run_at): pick other work."
	case client.ProblemCodeNotFound:
		return "No such node (or message) in your tenant: check the id."
	case client.ProblemCodeBadRequest:
		if p.Field != "" {
			return fmt.Sprintf("Fix the argument %q as the detail says, then call again.", p.Field)
		}
		return "Fix the arguments as the detail says, then call again."
	case client.ProblemCodeUnauthorized:
		return "The token is missing, invalid or expired: set TETHER_TOKEN (or --token) for `tether mcp`, or send a valid bearer token to /mcp."
	case client.ProblemCodeForbidden:
		return "Your token's role does not allow this action: ask an operator for a token with the role the detail names."
	case client.ProblemCodeRateLimited:
		return "Too many requests: wait a few seconds, then call again."
	case client.ProblemCodeAlreadyExists:
		return "A node with this id exists already: choose another id, or omit id to let the server choose."
	case client.ProblemCodeCycle:
		return "This edge would make a dependency cycle: choose other dependencies."
	case client.ProblemCodeGone:
		return "Those events are past the retention horizon: call history without after to start from the oldest kept."
	case client.ProblemCodePayloadTooLarge:
		return "The input is too large (see limit): send less."
	case client.ProblemCodeDiskFull:
		return "The server's disk is full: it refuses writes until an operator frees space, then takes them again; reads still work. Wait, then call again."
	case client.ProblemCodeUnavailable, client.ProblemCodeInternal:
		return "The server could not do this now: wait, then call again; if it persists, report the request_id."
	default:
		return "See the detail; call get_node to see the node's current state."
	}
}
