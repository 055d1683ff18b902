package graphstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/records"
)

// wantReady recomputes, from nodes and edges alone, which nodes of a queue
// belong in the ready index.
func wantReady(t *testing.T, s *Store, tenant, queue string) []string {
	t.Helper()
	var out []string
	require.NoError(t, s.View(func(tx *Tx) error {
		nodes, _, err := tx.NodeList(tenant, NodeQuery{Queue: queue, Status: string(records.StatusQueued), Limit: 100000})
		if err != nil {
			return err
		}
		for _, n := range nodes {
			blocked := false
			deps, err := tx.LiveEdges(tenant, n.ID, EdgeDependsOn, DirOut)
			if err != nil {
				return err
			}
			for _, e := range deps {
				d, err := tx.NodeGet(tenant, e.To)
				if err != nil {
					return err
				}
				blocked = blocked || !DependencySatisfied(d.Status, e)
			}
			kids, err := tx.LiveEdges(tenant, n.ID, EdgeParentOf, DirOut)
			if err != nil {
				return err
			}
			for _, e := range kids {
				c, err := tx.NodeGet(tenant, e.To)
				if err != nil {
					return err
				}
				blocked = blocked || !c.Status.Terminal()
			}
			if !blocked {
				out = append(out, n.ID)
			}
		}
		return nil
	}))
	return out
}

// haveReady lists the ready set as derived afresh from the records (as at
// open) and as the store keeps it in memory, in claim order.
func haveReady(t *testing.T, s *Store, tenant, queue string) (derived, mirrored []string) {
	t.Helper()
	fresh := indexes.NewReadyMirror(s.clock)
	require.NoError(t, s.derive(indexes.NewTable(), fresh, newBlobTable()))
	fresh.Ascend(tenant, queue, s.clock.Now(), func(id string) bool { derived = append(derived, id); return true })
	s.ready.Ascend(tenant, queue, s.clock.Now(), func(id string) bool { mirrored = append(mirrored, id); return true })
	return derived, mirrored
}

func TestReadyIndexMatchesGraphUnderRandomChanges(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	statuses := []records.Status{records.StatusQueued, records.StatusRunning, records.StatusDone, records.StatusFailed, records.StatusCancelled, records.StatusDead, records.StatusQueued}
	const n = 40
	id := func(i int) string { return fmt.Sprintf("n%02d", i) }
	for i := 0; i < n; i++ {
		insert(t, s, newNode("acme", id(i), int64(rng.IntN(3))))
	}
	for step := 0; step < 600; step++ {
		a, b := id(rng.IntN(n)), id(rng.IntN(n))
		err := s.Update(ctx, func(tx *Tx) error {
			switch op := rng.IntN(6); op {
			case 0, 1: // add an edge
				typ := EdgeDependsOn
				props := map[string]any{"on_fail": "cancel"}
				if op == 1 {
					typ, props = EdgeParentOf, nil
				} else if rng.IntN(2) == 0 {
					props["on_fail"] = OnFailIgnore
				}
				if typ == EdgeParentOf {
					child, err := tx.NodeGet("acme", b)
					if err != nil || child.Parent != "" {
						return err
					}
					if err := tx.EdgeInsert("acme", &records.Edge{From: a, Type: typ, To: b, Props: props}); err != nil {
						return err
					}
					child.Parent = a
					return tx.NodePut(child)
				}
				return tx.EdgeInsert("acme", &records.Edge{From: a, Type: typ, To: b, Props: props})
			case 2: // retire an edge
				for _, typ := range []string{EdgeDependsOn, EdgeParentOf} {
					e, err := tx.EdgeGet("acme", a, typ, b)
					if err != nil {
						continue
					}
					if err := tx.EdgeRetire("acme", e, "t", nil); err != nil {
						return err
					}
					if typ == EdgeParentOf {
						child, err := tx.NodeGet("acme", b)
						if err != nil {
							return err
						}
						child.Parent = ""
						return tx.NodePut(child)
					}
				}
				return nil
			case 3, 4: // change a status
				node, err := tx.NodeGet("acme", a)
				if err != nil {
					return err
				}
				node.Status = statuses[rng.IntN(len(statuses))]
				return tx.NodePut(node)
			default: // reprioritise or move queue
				node, err := tx.NodeGet("acme", a)
				if err != nil {
					return err
				}
				node.Priority = int64(rng.IntN(3))
				if rng.IntN(5) == 0 {
					node.Queue = []string{"q", "q2"}[rng.IntN(2)]
				}
				return tx.NodePut(node)
			}
		})
		var cycle *fault.Cycle
		var exists *fault.AlreadyExists
		if err != nil && !errors.As(err, &cycle) && !errors.As(err, &exists) {
			require.NoError(t, err, "step %d", step)
		}
		if step%20 == 0 || step == 599 {
			for _, q := range []string{"q", "q2"} {
				want := wantReady(t, s, "acme", q)
				stored, mirrored := haveReady(t, s, "acme", q)
				require.Equal(t, want, stored, "step %d queue %s: stored ready index", step, q)
				require.Equal(t, want, mirrored, "step %d queue %s: in-memory mirror", step, q)
			}
		}
	}
}

func TestReadyMirrorSurvivesRestartAndPromotesDelayed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s2, err := Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	later := clk.Now().Add(time.Minute)
	for i := 0; i < 5; i++ {
		n := newNode("acme", fmt.Sprintf("d%d", i), 0)
		if i%2 == 0 {
			n.RunAt = &later
		}
		insert(t, s2, n)
	}
	require.NoError(t, s2.Close())
	s3, err := Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	defer s3.Close()
	_, mirrored := haveReady(t, s3, "acme", "q")
	require.Equal(t, []string{"d1", "d3"}, mirrored, "delayed nodes wait")
	ready, _ := s3.ReadyStats("acme", "q")
	require.Equal(t, 2, ready)
	clk.Advance(time.Minute)
	_, mirrored = haveReady(t, s3, "acme", "q")
	require.Equal(t, []string{"d0", "d1", "d2", "d3", "d4"}, mirrored, "promoted once run_at passed")
	stats := s3.QueueStats("acme")
	require.Len(t, stats, 1)
	require.EqualValues(t, 5, stats[0].Counts[records.StatusQueued])
	require.True(t, slices.ContainsFunc(stats, func(q indexes.QueueStat) bool { return q.Ready == 5 }))
}

// The mirror offers a delayed node only once the record's run_at has passed,
// to the nanosecond (at the first whole ms from it): the claim checks the
// record to the nanosecond, and a node offered early
// was refused while the long poll the offer had woken waited on for a change
// that would not come again (its whole wait; seen as a flaky runner test).
func TestReadyMirrorOffersNoNodeBeforeItsRunAt(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := Open(Options{Dir: t.TempDir(), Clock: clk})
	require.NoError(t, err)
	defer s.Close()
	at := clk.Now().Add(20*time.Millisecond + 600*time.Microsecond)
	n := newNode("acme", "later", 0)
	n.RunAt = &at
	insert(t, s, n)
	changed, stop := s.ReadyWatch("acme", "q", indexes.ReadyFilter{})
	defer stop()

	clk.Advance(20*time.Millisecond + 200*time.Microsecond) // the same ms as run_at, before it
	_, mirrored := haveReady(t, s, "acme", "q")
	require.Empty(t, mirrored, "not offered before its run_at")
	select {
	case <-changed:
		t.Fatal("a waiter was woken for a node not yet due")
	default:
	}

	clk.Advance(800 * time.Microsecond) // the first whole ms after run_at
	_, mirrored = haveReady(t, s, "acme", "q")
	require.Equal(t, []string{"later"}, mirrored, "offered once due")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken when the node came due")
	}
}
