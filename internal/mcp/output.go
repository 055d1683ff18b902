package mcp

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// outputSchema is a tool's output schema: its answer (Out) or, for a tool
// error, the problem document with a hint (toolError). MCP asks that every
// structured result of a tool with an output schema match it, errors too
// (the TypeScript SDK's client checks both), so the schema admits both, and
// an agent can tell them apart by isError or by code.
func outputSchema[Out any]() *jsonschema.Schema {
	answer, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(Out), err)) // a programming error, caught by every test
	}
	return &jsonschema.Schema{Type: "object", AnyOf: []*jsonschema.Schema{answer, errorSchema()}}
}

// errorSchema is the schema of a tool error's structured content. A problem
// may carry members of its code beyond those named here, so others are
// allowed.
func errorSchema() *jsonschema.Schema {
	sc, err := jsonschema.For[toolError](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of a tool error: %v", err))
	}
	sc.AdditionalProperties = nil
	sc.Required = []string{"type", "status", "code", "hint"}
	sc.Description = "A tool error (isError): the API's problem document and a hint saying what to do."
	return sc
}
