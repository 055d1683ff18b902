package mcp

import sdk "github.com/modelcontextprotocol/go-sdk/mcp"

// hints are a tool's annotations, true to what the tool does, so that a
// client can tell which calls only read, which add, and which end work.
//
// openWorldHint is false for every tool: a tool acts only on this Tether
// server's graph, within the caller's tenant, and reaches no system outside
// it (no web, no files, no other service); what it can touch is known and
// closed.
type hints struct {
	readOnly, destructive, idempotent bool
}

var (
	// readOnly: reads the graph and changes nothing (get_node, history,
	// list_nodes, list_queues, wait_for).
	readOnly = hints{readOnly: true, idempotent: true}
	// additive: adds a record (a node, a comment, a message, a lease) and
	// destroys nothing; a repeat adds another.
	additive = hints{}
)

func (h hints) annotations(title string) *sdk.ToolAnnotations {
	closed := false
	destructive := h.destructive
	return &sdk.ToolAnnotations{
		Title: title, ReadOnlyHint: h.readOnly, DestructiveHint: &destructive,
		IdempotentHint: h.idempotent, OpenWorldHint: &closed,
	}
}
