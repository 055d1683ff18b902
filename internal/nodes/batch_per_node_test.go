package nodes

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/leasing"
)

// A batch runs at most its limit of ops at once, and uses all of it: with
// every op held until limit ops are in flight, the most ever in flight is
// the limit.
func TestPerNodeRunsAtMostLimitOpsAtOnce(t *testing.T) {
	t.Parallel()
	const limit, n = 4, 64
	ops := make([]BatchOp, n)
	for i := range ops {
		ops[i] = RenewOp(leasing.HolderParams{NodeID: fmt.Sprintf("n%02d", i)})
	}
	var inFlight, most atomic.Int64
	full := make(chan struct{}) // closed once limit ops are in flight
	var once sync.Once
	ran := make([]bool, n)
	perNode(ops, limit, func(i int) {
		now := inFlight.Add(1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		if now >= limit {
			once.Do(func() { close(full) })
		}
		<-full
		// Give way, so that ops beyond the limit, were any started, would
		// be in flight beside this one.
		for range 20 {
			runtime.Gosched()
		}
		ran[i] = true
		inFlight.Add(-1)
	})
	require.EqualValues(t, limit, most.Load())
	for i, r := range ran {
		require.True(t, r, "op %d ran", i)
	}
}

// The ops of one node run one after another, in the order given, on one
// goroutine; ops of other nodes run beside them.
func TestPerNodeRunsOneNodesOpsInOrder(t *testing.T) {
	t.Parallel()
	var ops []BatchOp
	for round := range 5 {
		for node := range 8 {
			ops = append(ops, RenewOp(leasing.HolderParams{NodeID: fmt.Sprintf("n%d", node), Session: fmt.Sprint(round)}))
		}
	}
	var mu sync.Mutex
	seen := map[string][]string{}
	perNode(ops, 3, func(i int) {
		mu.Lock()
		defer mu.Unlock()
		seen[ops[i].NodeID()] = append(seen[ops[i].NodeID()], ops[i].holder.Session)
	})
	require.Len(t, seen, 8)
	for id, sessions := range seen {
		require.Equal(t, []string{"0", "1", "2", "3", "4"}, sessions, id)
	}
}
