package indexes

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/records"
)

// testItem is the entry of a ready node of acme's queue q.
func testItem(id string, priority, created int64, typ, target string, labels ...string) *NodeEntry {
	e := &NodeEntry{Ref: NodeRef{"acme", id}, State: NodeState{Status: codeQueued, queue: atomOf("q"), typ: atomOf(typ), target: atomOf(target), labels: labelSetOf(labels)}}
	copy(e.State.order[:], records.OrderBytes(priority, created))
	return e
}

// inQueue is e moved to another queue of its tenant.
func inQueue(queue string, e *NodeEntry) *NodeEntry {
	e.State.queue = atomOf(queue)
	return e
}

// bruteForce is what a filtered walk must give: every claimable item, in
// claim order, that the filter's claimer may take, spelled out apart from
// ReadyFilter.matches.
func bruteForce(items map[string]*NodeEntry, now int64, f ReadyFilter) []string {
	var all []*NodeEntry
	for _, it := range items {
		if target := it.State.target.String(); it.State.runAt > now || (target != "" && target != f.Sub) {
			continue
		}
		if len(f.Types) > 0 && !slices.Contains(f.Types, it.State.typ.String()) {
			continue
		}
		carries := true
		for _, l := range f.Labels {
			carries = carries && slices.Contains(it.State.labels.labelList(), l)
		}
		if carries {
			all = append(all, it)
		}
	}
	slices.SortFunc(all, compareClaimOrder)
	var ids []string
	for _, it := range all {
		ids = append(ids, it.Ref.ID)
	}
	return ids
}

func walkFiltered(m *ReadyMirror, now time.Time, f ReadyFilter, limit int) []string {
	var got []string
	m.AscendFiltered("acme", "q", now, f, func(id string) bool {
		got = append(got, id)
		return len(got) < limit
	})
	return got
}

func TestReadyFilterWalkEqualsBruteForce(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	m := NewReadyMirror(clk)
	defer m.Close()
	rng := rand.New(rand.NewPCG(3, 5))
	types := []string{"build", "test", "lint", "deploy", "rare"}
	labels := []string{"x", "y", "z", "gpu", "eu", "us"}
	subs := []string{"", "", "", "alice", "bob"}
	pick := func(from []string, p float64) []string {
		var out []string
		for _, s := range from {
			if rng.Float64() < p {
				out = append(out, s)
			}
		}
		return out
	}
	items := map[string]*NodeEntry{}
	// Enough items that walks cross many chunks and horizons, and the
	// indexes of every type, label and target change under them.
	for step := range 6000 {
		id := fmt.Sprintf("n%04d", rng.IntN(3000))
		switch rng.IntN(10) {
		case 0, 1:
			if old, ok := items[id]; ok {
				m.remove(old)
			}
			delete(items, id)
		default:
			typ := types[rng.IntN(len(types)-1)]
			if rng.IntN(50) == 0 {
				typ = "rare"
			}
			it := testItem(id, int64(rng.IntN(4)), int64(rng.IntN(1000)), typ, subs[rng.IntN(len(subs))], pick(labels, 0.3)...)
			if rng.IntN(10) == 0 {
				it.State.runAt = clk.Now().UnixMilli() + int64(1+rng.IntN(60000))
			}
			if old, ok := items[id]; ok {
				m.remove(old)
			}
			m.add(it)
			items[id] = it
		}
		if step%200 != 0 {
			continue
		}
		if rng.IntN(3) == 0 {
			clk.Advance(time.Duration(rng.IntN(20000)) * time.Millisecond)
		}
		now := clk.Now()
		for range 30 {
			f := ReadyFilter{
				Types:  pick(types, 0.25),
				Labels: pick(labels, 0.2),
				Sub:    subs[rng.IntN(len(subs))],
			}
			want := bruteForce(items, now.UnixMilli(), f)
			require.Equal(t, want, walkFiltered(m, now, f, len(items)+1), "step %d filter %+v", step, f)
			if k := rng.IntN(100) + 1; k < len(want) {
				require.Equal(t, want[:k], walkFiltered(m, now, f, k), "step %d filter %+v stopped after %d", step, f, k)
			}
		}
	}
	// The repeated type stands for one: its items come out once.
	f := ReadyFilter{Types: []string{"build", "build", "test"}, Sub: "alice"}
	require.Equal(t, bruteForce(items, clk.Now().UnixMilli(), f), walkFiltered(m, clk.Now(), f, len(items)+1))
}

func TestReadyFilterPicksTheNarrowestSource(t *testing.T) {
	t.Parallel()
	m := NewReadyMirror(clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	defer m.Close()
	for i := range 1000 {
		labels := []string{"common"}
		if i%100 == 0 {
			labels = append(labels, "rare")
		}
		m.add(testItem(fmt.Sprintf("o%04d", i), 0, int64(i), []string{"build", "test"}[i%2], "", labels...))
		m.add(testItem(fmt.Sprintf("b%04d", i), 0, int64(i), "build", "bob"))
	}
	q := m.queues[TenantQueue{"acme", "q"}]
	size := func(f ReadyFilter) int {
		n := 0
		for _, t := range f.normal().sources(q, nil) {
			n += t.Len()
		}
		return n
	}
	require.Equal(t, 1000, size(ReadyFilter{Sub: "alice"}), "bob's nodes are not alice's to walk past")
	require.Equal(t, 2000, size(ReadyFilter{Sub: "bob"}))
	require.Equal(t, 10, size(ReadyFilter{Labels: []string{"common", "rare"}, Sub: "alice"}), "the rarest label")
	require.Equal(t, 10, size(ReadyFilter{Types: []string{"build"}, Labels: []string{"rare"}}))
	require.Equal(t, 500, size(ReadyFilter{Types: []string{"build"}, Labels: []string{"common"}}), "the type, rarer than the label")
	require.Equal(t, 0, size(ReadyFilter{Labels: []string{"nowhere"}, Sub: "bob"}), "a label nobody carries")
	require.Equal(t, 0, size(ReadyFilter{Types: []string{"deploy"}, Sub: "bob"}), "a type nobody has")
	require.Equal(t, 1500, size(ReadyFilter{Types: []string{"build", "lint"}, Sub: "bob"}), "the union of the types of both partitions")
}

func TestReadyFilterWakesOnlyMatchingWaiters(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	m := NewReadyMirror(clk)
	defer m.Close()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	gpu, stopGPU := m.Watch("acme", "q", ReadyFilter{Labels: []string{"gpu", "eu"}, Sub: "alice"})
	builds, stopBuilds := m.Watch("acme", "q", ReadyFilter{Types: []string{"build", "deploy"}, Sub: "alice"})
	bob, stopBob := m.Watch("acme", "q", ReadyFilter{Sub: "bob"})
	waiting, woken := m.WaitStats("acme", "q")
	require.Equal(t, 3, waiting, "three waiters filed")
	require.Zero(t, woken)

	m.add(testItem("t1", 0, 1, "test", "", "gpu"))             // gpu without eu; not a build
	m.add(testItem("t2", 0, 2, "build", "carol", "gpu", "eu")) // carol's
	m.add(testItem("t3", 0, 3, "build", "", "gpu"))
	m.add(inQueue("other", testItem("t4", 0, 4, "test", "bob")))
	require.True(t, closed(builds), "an untargeted build wakes the build waiter")
	require.False(t, closed(gpu), "nodes without both labels, or reserved to carol, do not wake the gpu waiter")
	require.True(t, closed(bob), "an untargeted node wakes a waiter without filters")
	waiting, woken = m.WaitStats("acme", "q")
	require.Equal(t, 1, waiting)
	require.EqualValues(t, 2, woken)

	later := clk.Now().Add(time.Minute)
	it := testItem("t5", 0, 5, "test", "alice", "eu", "gpu")
	it.State.runAt = later.UnixMilli()
	m.add(it)
	require.False(t, closed(gpu), "a delayed node wakes nobody before its run_at")
	clk.Advance(time.Minute)
	m.Ascend("acme", "q", clk.Now(), func(string) bool { return false }) // promotes
	require.True(t, closed(gpu), "it wakes its target once due")

	stopGPU()
	stopBuilds()
	stopBob()
	stopBob() // stop twice, or after a wake, is harmless
	kicked, stopKicked := m.Watch("acme", "q", ReadyFilter{Labels: []string{"nowhere"}, Sub: "dave"})
	defer stopKicked()
	m.Notify("acme", "q")
	require.True(t, closed(kicked), "Kick wakes every waiter of the queue")
	waiting, woken = m.WaitStats("acme", "q")
	require.Zero(t, waiting)
	require.EqualValues(t, 4, woken)
}
