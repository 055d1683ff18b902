package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

type bundle struct {
	reg *Registry
	clk *clocktest.Fake
}

func setup(t *testing.T, stale time.Duration) bundle {
	t.Helper()
	clk := clocktest.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	store, err := graphstore.Open(graphstore.Options{InMemory: true, Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	return bundle{reg: New(Config{Store: store, StaleAfter: stale}), clk: clk}
}

func (b bundle) beat(t *testing.T, p HeartbeatParams) View {
	t.Helper()
	if p.Tenant == "" {
		p.Tenant = "acme"
	}
	if p.By == "" {
		p.By = "alice"
	}
	v, err := b.reg.Heartbeat(context.Background(), p)
	require.NoError(t, err)
	return v
}

func (b bundle) list(t *testing.T, tenant string) []View {
	t.Helper()
	views, next, err := b.reg.List(tenant, "", MaxLimit)
	require.NoError(t, err)
	require.Empty(t, next)
	return views
}

func TestDefaultStaleWindow(t *testing.T) {
	t.Parallel()
	require.Equal(t, DefaultStaleAfter, setup(t, 0).reg.StaleAfter())
	require.Equal(t, 90*time.Second, DefaultStaleAfter)
}

func TestStartedAtFollowsTheWorkersLives(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Minute)
	t0 := b.clk.Now()
	v := b.beat(t, HeartbeatParams{Worker: "w", Status: StatusIdle})
	require.Equal(t, t0, v.StartedAt)

	b.clk.Advance(59 * time.Second)
	v = b.beat(t, HeartbeatParams{Worker: "w", Status: StatusWorking, Node: "n1"})
	require.Equal(t, t0, v.StartedAt, "a heartbeat within the window continues the life")
	require.Equal(t, t0.Add(59*time.Second), v.LastSeenAt)

	b.clk.Advance(time.Minute)
	require.True(t, b.list(t, "acme")[0].Stale)
	v = b.beat(t, HeartbeatParams{Worker: "w", Status: StatusIdle})
	require.Equal(t, b.clk.Now(), v.StartedAt, "after going stale, a new life")

	b.clk.Advance(time.Second)
	b.beat(t, HeartbeatParams{Worker: "w", Status: StatusOffline})
	b.clk.Advance(time.Second)
	v = b.beat(t, HeartbeatParams{Worker: "w", Status: StatusIdle})
	require.Equal(t, b.clk.Now(), v.StartedAt, "after offline, a new life")
	require.Empty(t, v.Node)
}

func TestHeartbeatRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	for _, p := range []HeartbeatParams{
		{Worker: "", Status: StatusIdle},
		{Worker: "-w", Status: StatusIdle},
		{Worker: "w", Status: ""},
		{Worker: "w", Status: "asleep"},
		{Worker: "w", Status: StatusIdle, Node: "n1"},
		{Worker: "w", Status: StatusWorking, Node: "bad id"},
		{Worker: "w", Status: StatusIdle, SetMeta: true, Meta: map[string]any{"big": string(make([]byte, MaxMetaBytes))}},
	} {
		p.Tenant, p.By = "acme", "alice"
		_, err := b.reg.Heartbeat(context.Background(), p)
		var invalid *fault.Invalid
		require.ErrorAs(t, err, &invalid, "%+v", p)
	}
	require.Empty(t, b.list(t, "acme"))
}

func TestListPagesInKeyOrderWithinTheTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	for _, by := range []string{"bob", "alice"} {
		for _, w := range []string{"z", "a", "m"} {
			b.beat(t, HeartbeatParams{By: by, Worker: w, Status: StatusIdle})
		}
	}
	b.beat(t, HeartbeatParams{Tenant: "globex", Worker: "a", Status: StatusIdle})

	var got []string
	cursor := ""
	for {
		page, next, err := b.reg.List("acme", cursor, 4)
		require.NoError(t, err)
		for _, v := range page {
			got = append(got, v.By+"/"+v.Worker)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, []string{"alice/a", "alice/m", "alice/z", "bob/a", "bob/m", "bob/z"}, got)
	require.Len(t, b.list(t, "globex"), 1)

	for _, bad := range []string{"!!", "d29ya2Vy", "dzphbGljZQ"} { // not base64; "worker"; "w:alice" without a name
		_, _, err := b.reg.List("acme", bad, 10)
		var invalid *fault.Invalid
		require.ErrorAs(t, err, &invalid, bad)
	}
}

// TestOneStateVocabulary: a worker's state is its status while it speaks,
// stale once silent for the window, and offline after a goodbye however
// long the silence since (a runner that stopped cleanly is never stale).
func TestOneStateVocabulary(t *testing.T) {
	t.Parallel()
	b := setup(t, time.Minute)
	require.Equal(t, StateIdle, b.beat(t, HeartbeatParams{Worker: "idle", Status: StatusIdle}).State)
	require.Equal(t, StateWorking, b.beat(t, HeartbeatParams{Worker: "busy", Status: StatusWorking, Node: "n1"}).State)
	off := b.beat(t, HeartbeatParams{Worker: "gone", Status: StatusOffline})
	require.Equal(t, StateOffline, off.State)
	require.False(t, off.Stale)

	b.clk.Advance(2 * time.Minute)
	states := map[string]State{}
	for _, v := range b.list(t, "acme") {
		states[v.Worker] = v.State
		require.Equal(t, v.State == StateStale, v.Stale, v.Worker)
	}
	require.Equal(t, map[string]State{"idle": StateStale, "busy": StateStale, "gone": StateOffline}, states)
	require.ElementsMatch(t, States(), []State{StateIdle, StateWorking, StateStale, StateOffline})
}

// TestOfflineWorkersAreForgotten: a worker that said offline leaves the
// list its retention after the goodbye; a silent one stays (stale) for a
// day; a worker that comes back is listed again.
func TestOfflineWorkersAreForgotten(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	store, err := graphstore.Open(graphstore.Options{InMemory: true, Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	b := bundle{reg: New(Config{Store: store, StaleAfter: time.Minute, OfflineRetention: 5 * time.Minute}), clk: clk}
	require.Equal(t, 5*time.Minute, b.reg.OfflineRetention())
	require.Equal(t, DefaultOfflineRetention, setup(t, 0).reg.OfflineRetention())

	// Eight runner processes, each stopping cleanly, and one that crashed.
	for i := range 8 {
		b.beat(t, HeartbeatParams{Worker: fmt.Sprintf("host-%d-1", 100+i), Status: StatusIdle})
		b.beat(t, HeartbeatParams{Worker: fmt.Sprintf("host-%d-1", 100+i), Status: StatusOffline})
	}
	b.beat(t, HeartbeatParams{Worker: "crashed", Status: StatusWorking, Node: "n1"})
	require.Len(t, b.list(t, "acme"), 9)

	b.clk.Advance(5*time.Minute - time.Millisecond)
	require.Len(t, b.list(t, "acme"), 9, "kept until the retention has passed")
	b.clk.Advance(time.Millisecond)
	views := b.list(t, "acme")
	require.Len(t, views, 1, "the eight offline rows are forgotten")
	require.Equal(t, "crashed", views[0].Worker)
	require.Equal(t, StateStale, views[0].State)

	b.beat(t, HeartbeatParams{Worker: "host-100-1", Status: StatusIdle})
	require.Len(t, b.list(t, "acme"), 2, "a worker that comes back is listed again")

	b.clk.Advance(Retention)
	require.Empty(t, b.list(t, "acme"), "a silent worker is forgotten a day after its last heartbeat")
}
