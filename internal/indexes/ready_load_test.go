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

// mirrorShape is everything a ready mirror holds, as plain values.
func mirrorShape(m *ReadyMirror) map[string]any {
	ids := func(t *readyTree) []string {
		var out []string
		t.Ascend(func(it *NodeEntry) bool { out = append(out, it.Ref.ID); return true })
		return out
	}
	index := func(ix *claimIndex) map[string]any {
		out := map[string]any{"all": ids(ix.all)}
		for k, t := range ix.byType {
			out["type "+k] = ids(t)
		}
		for k, t := range ix.byLabel {
			out["label "+k] = ids(t)
		}
		return out
	}
	shape := map[string]any{}
	for tq, q := range m.queues {
		qs := map[string]any{
			"entries": q.entries, "claimable": q.claimable,
			"open": index(q.open), "counts": fmt.Sprint(q.counts), "shown": fmt.Sprint(q.shown),
		}
		for target, ix := range q.targeted {
			qs["target "+target] = index(ix)
		}
		shape[tq.Tenant+"/"+tq.Queue] = qs
	}
	var delayed []string
	for _, e := range m.delayed.Due(time.Unix(1<<62, 0), m.delayed.Len()) {
		at, _ := m.delayed.Get(e)
		delayed = append(delayed, fmt.Sprint(at.UnixMilli(), e.Ref.Tenant, e.State.queue, e.Ref.ID))
	}
	slices.Sort(delayed)
	shape["delayed"] = delayed
	return shape
}

// load, which fills the trees side by side at open, builds the same mirror
// as tracking each node in turn: every queue's entries, their trees in claim
// order, the claim indexes by target, type and label, the counts and
// the delayed entries.
func TestLoadBuildsWhatTrackBuilds(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	now := clk.Now()
	rng := rand.New(rand.NewPCG(3, 5))
	statuses := []records.Status{records.StatusQueued, records.StatusQueued, records.StatusQueued, records.StatusRunning, records.StatusDone, records.StatusOpen}
	labels := [][]string{nil, {"gpu"}, {"gpu", "eu"}, {"eu"}}
	var entries []*NodeEntry
	seen := map[NodeRef]bool{}
	for i := range 3000 {
		n := &records.Node{
			Tenant: []string{"acme", "beta"}[rng.IntN(2)], ID: fmt.Sprintf("n%05d", rng.IntN(1_000_000)*10+i%10),
			Type: []string{"build", "index", "test"}[rng.IntN(3)], Status: statuses[rng.IntN(len(statuses))],
			Queue: []string{"", "q1", "q2"}[rng.IntN(3)], Priority: int64(rng.IntN(3)),
			Target: []string{"", "", "", "alice", "bob"}[rng.IntN(5)], Labels: labels[rng.IntN(len(labels))],
			CreatedAt: now.Add(-time.Duration(rng.IntN(1000)) * time.Millisecond),
		}
		if rng.IntN(5) == 0 {
			at := now.Add(time.Duration(rng.IntN(2000)-1000) * time.Millisecond)
			n.RunAt = &at
		}
		e := &NodeEntry{Ref: NodeRef{n.Tenant, n.ID}, State: StateOf(n, nil, false)}
		e.State.Deps = int32(rng.IntN(4) / 3) // a quarter blocked
		if !seen[e.Ref] {
			seen[e.Ref] = true
			entries = append(entries, e)
		}
	}
	tracked, loaded := NewReadyMirror(clk), NewReadyMirror(clk)
	defer tracked.Close()
	defer loaded.Close()
	var moves []countMove
	for _, e := range entries {
		// Each mirror files entries of its own.
		st := e.State
		tracked.track(&NodeEntry{Ref: e.Ref}, false, &st, &moves)
	}
	tracked.ShowCounts(moves)
	rng.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	loaded.ShowCounts(loaded.load(entries))
	want, got := mirrorShape(tracked), mirrorShape(loaded)
	require.Equal(t, want, got)
	require.NotEmpty(t, want["delayed"])
	require.Contains(t, want["acme/q1"], "target alice")
}
