package records

import (
	"bytes"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOrderBytesSortLikeListOrder(t *testing.T) {
	t.Parallel()
	type pc struct{ p, c int64 }
	cases := []pc{{5, 1}, {5, 2}, {0, 0}, {-3, 9}, {1 << 40, 3}, {-(1 << 40), 0}, {0, -5}, {7, 7}}
	sort.Slice(cases, func(i, j int) bool {
		return bytes.Compare(OrderBytes(cases[i].p, cases[i].c), OrderBytes(cases[j].p, cases[j].c)) < 0
	})
	for i := 1; i < len(cases); i++ {
		a, b := cases[i-1], cases[i]
		require.True(t, a.p > b.p || (a.p == b.p && a.c < b.c), "%v must sort before %v", a, b)
	}
}

func FuzzOrderBytes(f *testing.F) {
	f.Add(int64(0), int64(0), int64(1), int64(1))
	f.Add(int64(-1), int64(5), int64(1), int64(-5))
	f.Fuzz(func(t *testing.T, p1, c1, p2, c2 int64) {
		cmp := bytes.Compare(OrderBytes(p1, c1), OrderBytes(p2, c2))
		want := 0
		switch {
		case p1 > p2 || (p1 == p2 && c1 < c2):
			want = -1
		case p1 < p2 || (p1 == p2 && c1 > c2):
			want = 1
		}
		if cmp != want {
			t.Fatalf("order(%d,%d) vs order(%d,%d) = %d, want %d", p1, c1, p2, c2, cmp, want)
		}
	})
}

func FuzzKeysStayInsideTenant(f *testing.F) {
	f.Add("acme", "node-1", "acm")
	f.Add("a", "b", "a-b")
	f.Fuzz(func(t *testing.T, tenant, id, other string) {
		if tenant == other || bytes.ContainsRune([]byte(tenant+id+other), 0) || tenant == "" || other == "" {
			return
		}
		// A key of one tenant never falls under the prefix of another.
		k := NodeKey(tenant, id)
		p := NewKey(TagNode, other).Bytes()
		if bytes.HasPrefix(k, p) {
			t.Fatalf("node key of %q/%q is under the prefix of tenant %q", tenant, id, other)
		}
	})
}

// FuzzCompareOrder: CompareOrder orders any two keys exactly as
// bytes.Compare does (the keys OrderBytes makes among them).
func FuzzCompareOrder(f *testing.F) {
	f.Add(OrderBytes(0, 0), OrderBytes(0, 1))
	f.Add(OrderBytes(-1, 5), OrderBytes(1, 5))
	f.Add([]byte{0xff, 0, 0, 0, 0, 0, 0, 0, 1}, []byte{0xff, 0, 0, 0, 0, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, x, y []byte) {
		var a, b [OrderKeyLength]byte
		copy(a[:], x)
		copy(b[:], y)
		for _, pair := range [][2]*[OrderKeyLength]byte{{&a, &b}, {&b, &a}, {&a, &a}} {
			if got, want := CompareOrder(pair[0], pair[1]), bytes.Compare(pair[0][:], pair[1][:]); got != want {
				t.Fatalf("CompareOrder(%x, %x) = %d, bytes.Compare says %d", pair[0], pair[1], got, want)
			}
		}
	})
}
