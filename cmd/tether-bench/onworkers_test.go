package main

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestOnWorkersOneRequestPerWorkerAtATime: more requests than workers (as
// (f) makes with -reaper-leases above 32 000) are all made, each once, and
// no worker carries two at the same time; fewer start one each.
func TestOnWorkersOneRequestPerWorkerAtATime(t *testing.T) {
	for _, tc := range []struct{ workers, reqs int }{{32, 70}, {32, 10}, {1, 5}} {
		busy := make([]atomic.Int32, tc.workers)
		var mu sync.Mutex
		made := map[int]int{}
		onWorkers(tc.workers, tc.reqs, func(w, k int) {
			if busy[w].Add(1) != 1 {
				t.Errorf("workers %d, reqs %d: worker %d carries two requests at once", tc.workers, tc.reqs, w)
			}
			mu.Lock()
			made[k]++
			mu.Unlock()
			busy[w].Add(-1)
		})
		if len(made) != tc.reqs {
			t.Fatalf("workers %d, reqs %d: %d requests made", tc.workers, tc.reqs, len(made))
		}
		for k, n := range made {
			if n != 1 || k < 0 || k >= tc.reqs {
				t.Fatalf("workers %d, reqs %d: request %d made %d times", tc.workers, tc.reqs, k, n)
			}
		}
	}
}
