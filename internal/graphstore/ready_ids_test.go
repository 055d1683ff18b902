package graphstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/records"
)

// TestReadyIDsFollowNodeChangesAndRestart checks the filtered walk of the
// store against the node records, as nodes change type, labels and target
// while ready, and after a restart derives the mirror afresh.
func TestReadyIDsFollowNodeChangesAndRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	types, labels, targets := []string{"build", "test"}, []string{"x", "y", "gpu"}, []string{"", "", "alice", "bob"}
	shape := func(n *records.Node) {
		n.Type, n.Target, n.Labels = types[rng.IntN(2)], targets[rng.IntN(4)], []string{}
		for _, l := range labels {
			if rng.IntN(2) == 0 {
				n.Labels = append(n.Labels, l)
			}
		}
	}
	for i := range 200 {
		n := newNode("acme", fmt.Sprintf("n%03d", i), int64(rng.IntN(3)))
		shape(n)
		insert(t, s, n)
	}
	for i := range 100 {
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			n, err := tx.NodeGet("acme", fmt.Sprintf("n%03d", rng.IntN(200)))
			if err != nil {
				return err
			}
			shape(n)
			if i%10 == 0 {
				n.Status = records.StatusDone
			}
			return tx.NodePut(n)
		}))
	}
	check := func(s *Store, when string) {
		t.Helper()
		for _, f := range []indexes.ReadyFilter{
			{Sub: "alice"}, {Sub: "carol"}, {Types: []string{"build"}, Sub: "bob"},
			{Labels: []string{"gpu"}, Sub: "alice"}, {Types: []string{"test", "build"}, Labels: []string{"x", "y"}, Sub: "bob"},
		} {
			var want, got []string
			require.NoError(t, s.Update(ctx, func(tx *Tx) error {
				nodes, _, err := tx.NodeList("acme", NodeQuery{Queue: "q", Status: string(records.StatusQueued), Limit: 1000})
				if err != nil {
					return err
				}
				for _, n := range nodes { // in list order, which is claim order
					if offered(n, f) {
						want = append(want, n.ID)
					}
				}
				tx.ReadyIDs("acme", "q", f, func(id string) bool { got = append(got, id); return true })
				return nil
			}))
			require.NotEmpty(t, want, "%s: filter %+v selects something", when, f)
			require.Equal(t, want, got, "%s: filter %+v", when, f)
		}
	}
	check(s, "after the changes")
	require.NoError(t, s.Close())
	s, err = Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	defer s.Close()
	check(s, "after a restart")
}

// offered reports whether f's claimer may take the ready node n, from its
// record: the rule the mirror's indexes keep.
func offered(n *records.Node, f indexes.ReadyFilter) bool {
	if n.Target != "" && n.Target != f.Sub {
		return false
	}
	if len(f.Types) > 0 && !slices.Contains(f.Types, n.Type) {
		return false
	}
	for _, l := range f.Labels {
		if !slices.Contains(n.Labels, l) {
			return false
		}
	}
	return true
}
