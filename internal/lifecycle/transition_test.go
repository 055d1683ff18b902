package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/leasing"
	"github.com/tether-run/tether/internal/lifecycle"
	"github.com/tether-run/tether/internal/records"
)

type bundle struct {
	store  *graphstore.Store
	leases *leasing.Service
	clk    *clocktest.Fake
}

func setup(t *testing.T) *bundle {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	store, err := graphstore.Open(graphstore.Options{Dir: t.TempDir(), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	leases := leasing.New(leasing.Config{
		Store: store, Clock: clk,
		Limits: func(context.Context, string) (leasing.Limits, error) {
			return leasing.Limits{TTLDefault: 30 * time.Second, TTLMax: time.Minute}, nil
		},
	})
	return &bundle{store: store, leases: leases, clk: clk}
}

// insert stores a node in status st, as the transitions would have left it:
// open without a queue, a running node with alice's lease (attempt 1), and
// the others in queue q.
func (b *bundle) insert(t *testing.T, id string, st records.Status, maxAttempts int64) {
	t.Helper()
	n := &records.Node{
		Tenant: "acme", ID: id, Type: "task", Status: st, Queue: "q",
		Labels: []string{}, Props: map[string]any{}, MaxAttempts: maxAttempts,
		Usage: map[string]float64{}, UsageTotal: map[string]float64{}, OnChildFail: "fail",
	}
	if st == records.StatusOpen {
		n.Queue = ""
	}
	now := b.clk.Now().UTC()
	if st == records.StatusRunning {
		n.Attempts, n.LastFence = 1, 1
		n.Lease = &records.Lease{By: "alice", Fence: 1, TTLMS: 30_000, ClaimedAt: now, RenewedAt: now, ExpiresAt: now.Add(30 * time.Second)}
	}
	require.NoError(t, b.store.Update(context.Background(), func(tx *graphstore.Tx) error {
		if err := tx.IdentityEnsure("acme", "alice"); err != nil {
			return err
		}
		if err := tx.IdentityEnsure("acme", "bob"); err != nil {
			return err
		}
		return tx.NodeInsert(n, "head")
	}))
}

func (b *bundle) get(t *testing.T, id string) *records.Node {
	t.Helper()
	var n *records.Node
	require.NoError(t, b.store.View(func(tx *graphstore.Tx) (err error) {
		n, err = tx.NodeGet("acme", id)
		return err
	}))
	return n
}

// step is one transition as a case of the table: how to run it on n, and
// where it leads from each status it may start from (absent: illegal).
type step struct {
	name        string
	op          lifecycle.Op
	maxAttempts int64
	run         func(tx *graphstore.Tx, runs lifecycle.Runs, n *records.Node) error
	want        map[records.Status]records.Status
	refusal     error // the kind of fault an illegal step unwraps to
}

var (
	queued    = records.StatusQueued
	open      = records.StatusOpen
	running   = records.StatusRunning
	done      = records.StatusDone
	failed    = records.StatusFailed
	dead      = records.StatusDead
	cancelled = records.StatusCancelled
	expired   = records.StatusExpired
)

func steps() []step {
	notClaimable, leaseLost, conflict := &fault.NotClaimable{}, &fault.LeaseLost{}, &fault.Conflict{}
	return []step{
		{
			name: "claim", op: lifecycle.OpClaim, maxAttempts: 3, refusal: notClaimable,
			run: func(tx *graphstore.Tx, _ lifecycle.Runs, n *records.Node) error {
				_, err := lifecycle.Claim(tx, n, lifecycle.ClaimParams{By: "bob", TTL: time.Minute})
				return err
			},
			want: map[records.Status]records.Status{open: running, queued: running},
		},
		{
			name: "complete", op: lifecycle.OpComplete, maxAttempts: 3, refusal: leaseLost,
			run: func(tx *graphstore.Tx, runs lifecycle.Runs, n *records.Node) error {
				return lifecycle.Complete(tx, runs, n, lifecycle.CompleteParams{By: "alice", Usage: map[string]float64{"tokens": 1}})
			},
			want: map[records.Status]records.Status{running: done},
		},
		{
			name: "fail retry", op: lifecycle.OpFail, maxAttempts: 3, refusal: leaseLost,
			run: func(tx *graphstore.Tx, runs lifecycle.Runs, n *records.Node) error {
				return lifecycle.Fail(tx, runs, n, lifecycle.FailParams{By: "alice", Error: "boom", Requeue: true})
			},
			want: map[records.Status]records.Status{running: queued},
		},
		{
			name: "fail final", op: lifecycle.OpFail, maxAttempts: 3, refusal: leaseLost,
			run: func(tx *graphstore.Tx, runs lifecycle.Runs, n *records.Node) error {
				return lifecycle.Fail(tx, runs, n, lifecycle.FailParams{By: "alice", Error: "boom"})
			},
			want: map[records.Status]records.Status{running: failed},
		},
		{
			name: "fail dead", op: lifecycle.OpFail, maxAttempts: 1, refusal: leaseLost,
			run: func(tx *graphstore.Tx, runs lifecycle.Runs, n *records.Node) error {
				return lifecycle.Fail(tx, runs, n, lifecycle.FailParams{By: "alice", Error: "boom", Requeue: true})
			},
			want: map[records.Status]records.Status{running: dead},
		},
		{
			name: "release", op: lifecycle.OpRelease, maxAttempts: 3, refusal: leaseLost,
			run: func(tx *graphstore.Tx, runs lifecycle.Runs, n *records.Node) error {
				return lifecycle.Release(tx, runs, n, lifecycle.ReleaseParams{By: "alice"})
			},
			want: map[records.Status]records.Status{running: queued},
		},
		{
			name: "expire", op: lifecycle.OpExpire, maxAttempts: 3, refusal: leaseLost,
			run: func(tx *graphstore.Tx, runs lifecycle.Runs, n *records.Node) error {
				_, err := lifecycle.Expire(tx, runs, n, false)
				return err
			},
			want: map[records.Status]records.Status{running: queued},
		},
		{
			name: "expire dead", op: lifecycle.OpExpire, maxAttempts: 1, refusal: leaseLost,
			run: func(tx *graphstore.Tx, runs lifecycle.Runs, n *records.Node) error {
				_, err := lifecycle.Expire(tx, runs, n, true)
				return err
			},
			want: map[records.Status]records.Status{running: dead},
		},
		{
			name: "cancel", op: lifecycle.OpCancel, maxAttempts: 3, refusal: conflict,
			run: func(tx *graphstore.Tx, runs lifecycle.Runs, n *records.Node) error {
				_, err := lifecycle.Cancel(tx, runs, n, "head", n.ID, "")
				return err
			},
			want: map[records.Status]records.Status{open: cancelled, queued: cancelled, running: cancelled},
		},
		{
			name: "fail for child", op: lifecycle.OpFailForChild, maxAttempts: 3, refusal: conflict,
			run: func(tx *graphstore.Tx, runs lifecycle.Runs, n *records.Node) error {
				child := &records.Node{Tenant: "acme", ID: "child", Status: records.StatusFailed}
				_, err := lifecycle.FailForChild(tx, runs, n, child, "head")
				return err
			},
			want: map[records.Status]records.Status{open: failed, queued: failed, running: failed},
		},
		{
			name: "requeue", op: lifecycle.OpRequeue, maxAttempts: 3, refusal: conflict,
			run: func(tx *graphstore.Tx, _ lifecycle.Runs, n *records.Node) error {
				return lifecycle.Requeue(tx, n, "head", "")
			},
			want: map[records.Status]records.Status{failed: queued, dead: queued, cancelled: queued, expired: queued},
		},
		{
			name: "lapse", op: lifecycle.OpLapse, maxAttempts: 3, refusal: conflict,
			run: func(tx *graphstore.Tx, runs lifecycle.Runs, n *records.Node) error {
				past := tx.Now().Add(-time.Second)
				n.StartBy = &past
				_, err := lifecycle.Lapse(tx, runs, n)
				return err
			},
			want: map[records.Status]records.Status{open: expired, queued: expired},
		},
	}
}

// TestTransitionTable runs every transition from every status: a legal one
// leads where the table says and ends any lease; an illegal one is an
// IllegalTransition carrying the problem the API has always answered with,
// and changes nothing.
func TestTransitionTable(t *testing.T) {
	b := setup(t)
	covered := map[lifecycle.Op]bool{lifecycle.OpCreate: true} // TestCreateTable
	for i, s := range steps() {
		covered[s.op] = true
		for _, from := range records.Statuses() {
			t.Run(fmt.Sprintf("%s from %s", s.name, from), func(t *testing.T) {
				id := fmt.Sprintf("n%02d-%s", i, from)
				b.insert(t, id, from, s.maxAttempts)
				before := b.get(t, id)
				err := b.store.Update(context.Background(), func(tx *graphstore.Tx) error {
					n, err := tx.NodeGet("acme", id)
					if err != nil {
						return err
					}
					return s.run(tx, b.leases, n)
				})
				want, legal := s.want[from]
				require.Equal(t, legal, lifecycle.Legal(s.op, from), "Legal disagrees with the table")
				after := b.get(t, id)
				if legal {
					require.NoError(t, err)
					require.Equal(t, want, after.Status)
					require.Equal(t, want == running, after.Lease != nil, "only a running node holds a lease")
					return
				}
				var illegal *lifecycle.IllegalTransition
				require.ErrorAs(t, err, &illegal)
				require.Equal(t, s.op, illegal.Op)
				require.Equal(t, from, illegal.From)
				require.IsType(t, s.refusal, illegal.Refusal)
				require.True(t, errors.Is(err, illegal.Refusal))
				require.Equal(t, before, after, "a refused transition changes nothing")
			})
		}
	}
	for _, op := range lifecycle.Ops() {
		require.True(t, covered[op], "transition %s has no row in the table", op)
	}
}

// TestCreateTable: only a node not yet stored gets its first status.
func TestCreateTable(t *testing.T) {
	for _, from := range append([]records.Status{""}, records.Statuses()...) {
		for _, queue := range []string{"", "q"} {
			n := &records.Node{Status: from, Queue: queue}
			err := lifecycle.Create(n)
			if from == "" {
				require.NoError(t, err)
				require.Equal(t, map[string]records.Status{"": open, "q": queued}[queue], n.Status)
				continue
			}
			var illegal *lifecycle.IllegalTransition
			require.ErrorAs(t, err, &illegal)
			require.Equal(t, lifecycle.OpCreate, illegal.Op)
			require.Equal(t, from, n.Status, "a refused create changes nothing")
		}
	}
}

// TestMoveQueue: a node at rest follows its queue; others keep their status.
func TestMoveQueue(t *testing.T) {
	for _, from := range records.Statuses() {
		n := &records.Node{Status: from}
		lifecycle.MoveQueue(n, "q")
		want := from
		if from.AtRest() {
			want = queued
		}
		require.Equal(t, want, n.Status)
		lifecycle.MoveQueue(n, "")
		if from.AtRest() {
			want = open
		}
		require.Equal(t, want, n.Status)
	}
}

// TestExpiryFailsParent: a child whose lease expires into dead fails its
// parent (on_child_fail: fail) inside the leasing package's own settling of
// the expiry, with no hook from the nodes package.
func TestExpiryFailsParent(t *testing.T) {
	b := setup(t)
	b.insert(t, "parent", records.StatusQueued, 3)
	b.insert(t, "child", records.StatusRunning, 1)
	require.NoError(t, b.store.Update(context.Background(), func(tx *graphstore.Tx) error {
		n, err := tx.NodeGet("acme", "child")
		if err != nil {
			return err
		}
		n.Parent = "parent"
		if err := tx.NodePut(n); err != nil {
			return err
		}
		return tx.EdgeInsert("acme", &records.Edge{From: "parent", Type: graphstore.EdgeParentOf, To: "child", CreatedBy: "head"})
	}))
	b.clk.Advance(31 * time.Second)
	// A release by bob, who holds nothing, settles alice's dead lease first.
	_, err := b.leases.Release(context.Background(), leasing.ReleaseParams{HolderParams: leasing.HolderParams{Tenant: "acme", NodeID: "child", By: "bob"}})
	require.NoError(t, err)
	require.Equal(t, dead, b.get(t, "child").Status)
	parent := b.get(t, "parent")
	require.Equal(t, failed, parent.Status)
	require.Equal(t, "child child ended dead", *parent.Error)
}
