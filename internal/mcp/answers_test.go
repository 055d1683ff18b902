package mcp

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// TestNodeOutputsAreProjections holds the tools' compact node shapes to the
// API's Node: they carry a chosen few of its fields (get_node points to the
// rest), under the same names, so a field renamed or dropped in the spec
// fails here instead of leaving a tool answering a stale name. A field added
// to Node needs nothing here.
func TestNodeOutputsAreProjections(t *testing.T) {
	t.Parallel()
	names := func(typ reflect.Type) map[string]bool {
		out := map[string]bool{}
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out[name] = true
		}
		return out
	}
	node := names(reflect.TypeFor[client.Node]())
	// derived: holder is the live lease's by.
	derived := map[string]bool{"holder": true}
	for _, typ := range []reflect.Type{reflect.TypeFor[nodeOut](), reflect.TypeFor[nodeRow]()} {
		for name := range names(typ) {
			require.True(t, node[name] || derived[name], "%s.%s is not a field of client.Node", typ.Name(), name)
		}
	}
}
