package sim

import (
	"flag"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	seedFlag  = flag.Int64("seed", -1, "replay this one seed, tracing every step")
	seedsFlag = flag.Int("seeds", 200, "how many seeds TestSim runs (make sim SEEDS=n)")
	firstFlag = flag.Uint64("first", 1, "the first seed TestSim runs")
	stepsFlag = flag.Int("steps", 150, "steps per seed")
)

// TestSim runs -seeds seeded schedules of the lease core on the in-memory
// engine, checking every invariant after each step; -seed n replays one.
func TestSim(t *testing.T) {
	if *seedFlag >= 0 {
		seed := uint64(*seedFlag)
		res := runSeed(t, seed, true)
		t.Logf("seed %d: %s", seed, summary(res))
		if res.Err != nil {
			t.Fatal(res.Report(seed))
		}
		return
	}
	// The seeds are shared out among GOMAXPROCS parallel workers, each
	// seed in a bubble of its own.
	workers := runtime.GOMAXPROCS(0)
	totals := make([]Result, workers)
	started := time.Now()
	t.Run("seeds", func(t *testing.T) {
		for k := range workers {
			t.Run(fmt.Sprint(k), func(t *testing.T) {
				t.Parallel()
				for seed := *firstFlag + uint64(k); seed < *firstFlag+uint64(*seedsFlag); seed += uint64(workers) {
					res := runSeed(t, seed, false)
					if res.Err != nil {
						t.Fatal(res.Report(seed))
					}
					totals[k].add(res)
				}
			})
		}
	})
	var total Result
	for _, r := range totals {
		total.add(r)
	}
	t.Logf("%d seeds from %d, %s; took %v", *seedsFlag, *firstFlag, summary(total), time.Since(started).Round(time.Millisecond))
}

// runSeed runs one seed in a bubble of its own; the bubble's end proves
// every goroutine the store started has exited.
func runSeed(t *testing.T, seed uint64, trace bool) Result {
	var res Result
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{Seed: seed, Steps: *stepsFlag}
		if trace {
			cfg.Trace = func(line string) { t.Log(line) }
		}
		res = Run(cfg)
	})
	return res
}

func summary(r Result) string {
	return fmt.Sprintf("%d steps, %.1f simulated hours, %d acknowledged operations, %d crashes (%d keeping a torn group), %d write failures, %d restarts",
		r.Steps, r.Simulated.Hours(), r.Acked, r.Crashes, r.Torn, r.Failures, r.Restarts)
}

func (r *Result) add(o Result) {
	r.Steps += o.Steps
	r.Simulated += o.Simulated
	r.Acked += o.Acked
	r.Crashes += o.Crashes
	r.Torn += o.Torn
	r.Failures += o.Failures
	r.Restarts += o.Restarts
}

// A seed replays exactly: the same trace, step for step.
func TestSimReplaysASeedExactly(t *testing.T) {
	for _, seed := range []uint64{3, 17, 101} {
		a, b := runSeed(t, seed, false), runSeed(t, seed, false)
		require.NoError(t, a.Err)
		require.Equal(t, a.Digest, b.Digest, "seed %d ran two ways", seed)
		require.Equal(t, a.Steps, b.Steps)
	}
}
