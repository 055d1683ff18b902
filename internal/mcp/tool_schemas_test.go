package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// undescribed lists the paths of the properties of schema (an input
// schema as JSON), at any depth, that have no description.
func undescribed(path string, schema map[string]any) []string {
	var out []string
	props, _ := schema["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p, _ := props[name].(map[string]any)
		if d, _ := p["description"].(string); d == "" {
			out = append(out, path+name)
		}
		out = append(out, undescribed(path+name+".", p)...)
		if items, ok := p["items"].(map[string]any); ok {
			out = append(out, undescribed(path+name+"[].", items)...)
		}
	}
	return out
}

// Every parameter of every tool, nested ones too, tells a model what it is.
func TestEveryToolParameterIsDescribed(t *testing.T) {
	t.Parallel()
	e := start(t)
	cs := e.streamable(e.token("agent-s"))
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var missing []string
	for _, tool := range tools.Tools {
		b, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		var schema map[string]any
		require.NoError(t, json.Unmarshal(b, &schema))
		for _, p := range undescribed("", schema) {
			missing = append(missing, fmt.Sprintf("%s: %s", tool.Name, p))
		}
	}
	require.Empty(t, missing, "tool parameters without a description")
}
