package graph

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScanMergesSnapshotAndOwnWrites: inside one write transaction, scans see
// the committed keys and the transaction's own sets and deletes, in order,
// forward, reverse and from a cursor.
func TestScanMergesSnapshotAndOwnWrites(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	prefix := newKey(tagNode, "acme").bytes()
	key := func(i int) []byte { return nodeKey("acme", fmt.Sprintf("k%03d", i)) }
	want := map[string]string{}
	require.NoError(t, s.Update(ctx, true, func(tx *Tx) error {
		for i := 0; i < 100; i += 2 {
			if err := tx.set(key(i), []byte("old")); err != nil {
				return err
			}
			want[string(key(i))] = "old"
		}
		return tx.set(nodeKey("other", "k001"), []byte("other tenant"))
	}))
	rng := rand.New(rand.NewPCG(1, 2))
	require.NoError(t, s.Update(ctx, true, func(tx *Tx) error {
		for step := 0; step < 300; step++ {
			i := rng.IntN(100)
			if rng.IntN(3) == 0 {
				if err := tx.del(key(i)); err != nil {
					return err
				}
				delete(want, string(key(i)))
			} else {
				v := fmt.Sprintf("v%d", step)
				if err := tx.set(key(i), []byte(v)); err != nil {
					return err
				}
				want[string(key(i))] = v
			}
			if step%25 != 0 {
				continue
			}
			keys := make([]string, 0, len(want))
			for k := range want {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var got []string
			require.NoError(t, tx.scan(prefix, nil, false, true, func(k, v []byte) (bool, error) {
				require.Equal(t, want[string(k)], string(v))
				got = append(got, string(k))
				return true, nil
			}))
			require.Equal(t, keys, got, "forward, step %d", step)
			got = got[:0]
			require.NoError(t, tx.scan(prefix, nil, true, false, func(k, _ []byte) (bool, error) {
				got = append(got, string(k))
				return true, nil
			}))
			rev := slices.Clone(keys)
			slices.Reverse(rev)
			require.Equal(t, rev, got, "reverse, step %d", step)
			if len(keys) > 3 {
				got = got[:0]
				require.NoError(t, tx.scan(prefix, []byte(keys[2]), false, false, func(k, _ []byte) (bool, error) {
					got = append(got, string(k))
					return true, nil
				}))
				require.Equal(t, keys[3:], got, "after, step %d", step)
			}
		}
		return nil
	}))
}
