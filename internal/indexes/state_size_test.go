package indexes

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestInMemoryEntriesFitTheirSizeClasses: every node holds a table entry
// (the ready mirror's trees hold the entries themselves), so a field that
// pushes it past its Go allocation size class (256 bytes) costs 32 MB per
// million nodes (make bench's (g) holds a million).
func TestInMemoryEntriesFitTheirSizeClasses(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(NodeEntry{}), uintptr(256), "nodeEntry")
}
