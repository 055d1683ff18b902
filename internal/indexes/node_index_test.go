package indexes

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// A nodeIndex whose hash gives only four values, so most refs clash, holds
// exactly what a map keyed by the ref holds, through sets, replacements and
// deletes in any order.
func TestNodeIndexAgreesWithAMapUnderClashes(t *testing.T) {
	t.Parallel()
	x := newNodeIndex(0)
	x.hashed = func(r NodeRef) uint64 { return uint64(len(r.ID) % 4) }
	want := map[NodeRef]*NodeEntry{}
	check := func() {
		require.Equal(t, len(want), x.Len())
		for ref, e := range want {
			got, ok := x.Get(ref)
			require.True(t, ok, ref)
			require.Same(t, e, got, ref)
		}
		seen := 0
		for e := range x.all() {
			require.Same(t, want[e.Ref], e)
			seen++
		}
		require.Equal(t, len(want), seen)
	}
	for i := range 400 {
		ref := NodeRef{[]string{"acme", "beta"}[i%2], fmt.Sprintf("n%d", i%97)}
		switch {
		case i%5 == 4:
			x.delete(ref)
			delete(want, ref)
			_, ok := x.Get(ref)
			require.False(t, ok)
		default:
			e := &NodeEntry{Ref: ref}
			x.set(ref, e)
			want[ref] = e
		}
		check()
	}
	require.NotEmpty(t, x.clash, "the test made refs clash")
}
