package graph

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestInMemoryEntriesFitTheirSizeClasses: a million queued nodes hold a table
// entry and a ready item each, so a field that pushes either past its Go
// allocation size class (256 and 96 bytes) costs 32 or 16 MB per million
// nodes (make bench's (g) holds a million).
func TestInMemoryEntriesFitTheirSizeClasses(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(nodeEntry{}), uintptr(256), "nodeEntry")
	require.LessOrEqual(t, unsafe.Sizeof(readyItem{}), uintptr(96), "readyItem")
}
