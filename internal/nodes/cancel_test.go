package nodes_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

// Cancel reaches every non-terminal descendant and every dependent whose
// depends_on edge says on_fail: cancel, ends the running ones' leases, and
// leaves done nodes and on_fail: ignore dependents alone.
func TestCancelCascades(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.create(t,
		spec("root", "q"),
		spec("kid-run", "q", parent("root")),
		spec("kid-done", "q", parent("root")),
		spec("kid-mid", "q", parent("root")),
		spec("grandkid", "q", parent("kid-mid")),
		spec("dep-cancel", "q", dependsOn("root")),
		spec("dep-of-dep", "q", dependsOn("dep-cancel")),
		spec("dep-ignore", "q"),
		spec("bystander", "q"),
	)
	_, err := b.nodes.AddEdge(ctx, b.head, nodes.EdgeSpec{From: "dep-ignore", Type: "depends_on", To: "root",
		Props: map[string]any{"on_fail": nodes.OnFailIgnore}})
	require.NoError(t, err)
	b.claim(t, b.alice, "kid-done")
	_, err = b.nodes.Complete(ctx, nodes.CompleteParams{HolderParams: holder(b.alice, "kid-done")})
	require.NoError(t, err)
	b.claim(t, b.alice, "kid-run")
	require.EqualValues(t, 1, b.leases.LiveCount("acme", "alice"))

	before, err := b.nodes.Events("acme", 0, 10000)
	require.NoError(t, err)
	cancelled, err := b.nodes.Cancel(ctx, b.head, "root", "no longer needed")
	require.NoError(t, err)
	want := []string{"root", "kid-run", "kid-mid", "grandkid", "dep-cancel", "dep-of-dep"}
	require.ElementsMatch(t, want, cancelled)

	for _, id := range want {
		n := b.get(t, id)
		require.Equal(t, records.StatusCancelled, n.Status, id)
		require.Nil(t, n.Lease, id)
	}
	require.Equal(t, records.StatusDone, b.status(t, "kid-done"))
	require.Equal(t, records.StatusQueued, b.status(t, "dep-ignore"))
	require.Equal(t, records.StatusQueued, b.status(t, "bystander"))
	require.EqualValues(t, 0, b.leases.LiveCount("acme", "alice"))
	edges, _, err := b.nodes.Edges("acme", "kid-run", graphstore.EdgeQuery{Dir: graphstore.DirOut, Type: graphstore.EdgeAssigned, IncludeRetired: true}, 10, "")
	require.NoError(t, err)
	require.Len(t, edges, 1)
	require.NotNil(t, edges[0].RetiredAt, "the run's assigned edge is retired")
	require.Equal(t, "cancelled", edges[0].Props["outcome"])

	// One transaction: the cancel's events are one unbroken run of seqs,
	// all stamped with one instant, one cancelled event per node.
	after, err := b.nodes.Events("acme", before[len(before)-1].Seq, 10000)
	require.NoError(t, err)
	got := map[string]int{}
	for i, e := range after {
		require.Equal(t, after[0].Seq+uint64(i), e.Seq)
		require.Equal(t, after[0].At, e.At)
		if e.Type == records.EventCancelled {
			got[e.NodeID]++
		}
	}
	for _, id := range want {
		require.Equal(t, 1, got[id], id)
	}
	require.Len(t, got, len(want))

	// The dependent that ignores failures is claimable now: its only
	// dependency ended.
	require.Equal(t, records.StatusRunning, b.claim(t, b.bob, "dep-ignore").Node.Status)
}

// A cancel that reaches only terminal nodes cancels nothing and changes
// nothing; an unknown id is not found.
func TestCancelOfTerminalNodeChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.create(t, spec("a", "q", onChildFail(nodes.OnChildFailIgnore)), spec("child", "q", parent("a")))
	ids, err := b.nodes.Cancel(ctx, b.head, "child", "")
	require.NoError(t, err)
	require.Equal(t, []string{"child"}, ids)
	n := b.get(t, "child")

	ids, err = b.nodes.Cancel(ctx, b.head, "child", "again")
	require.NoError(t, err)
	require.Empty(t, ids)
	require.Equal(t, n.Version, b.get(t, "child").Version)
	require.Equal(t, records.StatusQueued, b.status(t, "a"))

	_, err = b.nodes.Cancel(ctx, b.head, "nope", "")
	var nf *fault.NotFound
	require.ErrorAs(t, err, &nf)
}
