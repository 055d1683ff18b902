package mcp_test

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/mcp"
)

// A node id is one path segment of the API: "." and ".." name no node, and
// no argument reaches another route ("." once read the node "events", ".."
// the tenant's whole event feed).
func TestToolsRefuseDotSegmentIDs(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.queued("events", "q")
	cs := e.stdio(e.token("agent-d"), mcp.Options{})
	for _, id := range []string{".", ".."} {
		for _, name := range []string{"history", "get_node", "comment", "renew", "complete"} {
			args := map[string]any{"node_id": id}
			if name == "comment" {
				args["body"] = "hi"
			}
			m := toolError(t, call(t, cs, name, args), 400, "bad_request")
			require.Equal(t, "node_id", m["field"], "%s %q: %v", name, id, m)
		}
		_, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "tether://nodes/" + id})
		require.Error(t, err, id)
	}
	toolError(t, call(t, cs, "claim_next", map[string]any{"queue": ".."}), 400, "bad_request")
}
