package graphstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tether-run/tether/internal/clock/clocktest"
	"github.com/tether-run/tether/internal/indexes"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/records"
)

// TestRebuildAcrossScanBatches: a store of several scan batches of nodes,
// whose ids run against their list order (priorities at random, ids
// counting down), in two tenants and two queues, with some nodes cancelled
// and some done, opens again into the same lists, ready order and counts,
// and tether check finds nothing wrong.
func TestRebuildAcrossScanBatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	total := 3*indexes.RecordBatchLen + 7
	for i := range total {
		tenant := []string{"acme", "umbrella"}[i%2]
		n := newNode(tenant, fmt.Sprintf("n%05d", total-i), int64(rng.IntN(3)))
		n.Queue = []string{"q", "r"}[rng.IntN(2)]
		insert(t, s, n)
		clk.Advance(time.Millisecond)
	}
	for i := range total / 10 {
		tenant := []string{"acme", "umbrella"}[i%2]
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			n, err := tx.NodeGet(tenant, fmt.Sprintf("n%05d", total-i))
			if err != nil {
				return err
			}
			n.Status = []records.Status{records.StatusCancelled, records.StatusDone}[i%2]
			return tx.NodePut(n)
		}))
	}
	type seen struct {
		lists map[string][]string
		ready map[string][]string
		stats map[string][]indexes.QueueStat
	}
	look := func(s *Store) seen {
		t.Helper()
		got := seen{lists: map[string][]string{}, ready: map[string][]string{}, stats: map[string][]indexes.QueueStat{}}
		require.NoError(t, s.View(func(tx *Tx) error {
			for _, tenant := range []string{"acme", "umbrella"} {
				nodes, _, err := tx.NodeList(tenant, NodeQuery{Limit: 1000})
				if err != nil {
					return err
				}
				for _, n := range nodes {
					got.lists[tenant] = append(got.lists[tenant], n.ID)
				}
				for _, q := range []string{"q", "r"} {
					tx.ReadyIDs(tenant, q, indexes.ReadyFilter{}, func(id string) bool {
						got.ready[tenant+"/"+q] = append(got.ready[tenant+"/"+q], id)
						return true
					})
				}
				got.stats[tenant] = s.QueueStats(tenant)
			}
			return nil
		}))
		require.Len(t, got.ready, 4)
		return got
	}
	before := look(s)
	require.NoError(t, s.Close())
	s, err = Open(Options{Dir: dir, Clock: clk})
	require.NoError(t, err)
	after := look(s)
	require.NoError(t, s.Close())
	require.Equal(t, before, after)
	report, err := Check(dir)
	require.NoError(t, err)
	require.Empty(t, report.Problems)
	require.Equal(t, total, report.Nodes)
}

// TestRebuildNamesARecordThatDoesNotDecode: a node record that does not
// decode, in a later scan batch than the first, stops the open with an
// error that names its key.
func TestRebuildNamesARecordThatDoesNotDecode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	for i := range 2*indexes.RecordBatchLen + 3 {
		insert(t, s, newNode("acme", fmt.Sprintf("n%05d", i), 0))
	}
	bad := fmt.Sprintf("n%05d", indexes.RecordBatchLen+5)
	require.NoError(t, s.KV().Update(context.Background(), func(ktx *kv.Txn) error {
		return ktx.Set(records.NodeKey("acme", bad), []byte{0xc1})
	}))
	require.NoError(t, s.Close())
	_, err = Open(Options{Dir: dir})
	require.ErrorContains(t, err, "error decoding")
	require.ErrorContains(t, err, bad)
}
