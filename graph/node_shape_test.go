package graph

import (
	"reflect"
	"testing"

	"github.com/tether-run/tether/internal/records"
)

// TestNodeIsAProjection holds the public Node to the stored one: it carries
// a chosen subset of the stored fields (nodeOf copies them), under the same
// Go names, so a stored field renamed or dropped fails here rather than
// leaving nodeOf to copy the wrong thing. A field added to the stored node
// needs nothing here; one added to Node must be a stored field.
func TestNodeIsAProjection(t *testing.T) {
	t.Parallel()
	stored := reflect.TypeFor[records.Node]()
	for f := range reflect.TypeFor[Node]().Fields() {
		if _, ok := stored.FieldByName(f.Name); !ok {
			t.Errorf("graph.Node.%s is not a field of records.Node", f.Name)
		}
	}
}
