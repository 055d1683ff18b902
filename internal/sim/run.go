package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing/synctest"
	"time"

	"github.com/tether-run/tether/internal/kv"
)

// Config is one simulated run.
type Config struct {
	Seed  uint64
	Steps int
	// Trace, when set, hears every step as it is taken.
	Trace func(line string)
	// sabotage, in the simulation's own tests, runs after each step's
	// operation and before its checks: it breaks the system the way a bug
	// would, to prove the checks catch it.
	sabotage func(r *runner) error
}

// Result is what a run covered, and the first invariant it found broken.
type Result struct {
	Steps     int           // steps taken
	Simulated time.Duration // fake time the run covered
	Crashes   int           // power cuts, with a write in flight or not
	Torn      int           // crashes that cut a group mid-sync and kept part of it
	Failures  int           // injected write failures
	Restarts  int           // clean restarts
	Acked     int           // operations acknowledged
	Digest    uint64        // a hash of the trace: equal for equal runs
	// Err is the first broken invariant (nil: none), at step FailedStep.
	Err        error
	FailedStep int
	// Tail is the trace's last lines before the failure.
	Tail []string
}

// Run runs the simulation of cfg.Seed. It must run inside a synctest
// bubble (synctest.Test): every timer of the system under test (lease
// TTLs, the reaper, the engine's sync delays) runs on the bubble's fake
// clock, and the run waits for the bubble to be idle between steps, so a
// seed decides the whole run.
func Run(cfg Config) Result {
	r := &runner{
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		w:        &world{disk: kv.NewMemDisk()},
		m:        newModel(),
		trace:    cfg.Trace,
		sabotage: cfg.sabotage,
		hash:     fnvOffset,
	}
	start := time.Now()
	res := r.run(cfg.Steps)
	res.Simulated = time.Since(start)
	res.Digest = r.hash
	return res
}

// runner is one run's state.
type runner struct {
	rng      *rand.Rand
	w        *world
	m        *model
	res      Result
	step     int
	trace    func(string)
	sabotage func(*runner) error
	tail     []string
	hash     uint64
}

// reaperEvery is the lease reaper's interval in the simulation.
const reaperEvery = time.Second

func (r *runner) run(steps int) Result {
	defer r.w.close()
	if err := r.w.open(reaperEvery); err != nil {
		return r.fail(err)
	}
	for r.step = 1; r.step <= steps; r.step++ {
		time.Sleep(r.pause())
		synctest.Wait()
		if err := r.take(); err != nil {
			return r.fail(err)
		}
		r.settle()
		if r.sabotage != nil {
			if err := r.sabotage(r); err != nil {
				return r.fail(err)
			}
			r.settle()
		}
		if err := r.check(); err != nil {
			return r.fail(err)
		}
		r.res.Steps = r.step
	}
	return r.res
}

// settle waits for the bubble to be idle with nothing written and not
// synced: the derived state runs ahead of the records by the writes
// applied and not yet durable (a reap, a claim), so the two are compared
// only once those are durable.
func (r *runner) settle() {
	synctest.Wait()
	for r.w.disk.Syncing() {
		time.Sleep(time.Millisecond)
		synctest.Wait()
	}
}

// pause is the fake time between two steps: mostly seconds, sometimes
// minutes, so leases expire and the reaper works.
func (r *runner) pause() time.Duration {
	switch k := r.rng.IntN(10); {
	case k == 0:
		return 0
	case k == 1:
		return time.Duration(30+r.rng.IntN(150)) * time.Second
	case k < 4:
		return time.Duration(4_000+r.rng.IntN(26_000)) * time.Millisecond
	default:
		return time.Duration(r.rng.IntN(4_000)) * time.Millisecond
	}
}

func (r *runner) fail(err error) Result {
	r.res.Err, r.res.FailedStep, r.res.Tail = err, r.step, r.tail
	return r.res
}

// logf records a line of the trace: kept for a failure's report, hashed
// into the digest, handed to Config.Trace.
func (r *runner) logf(format string, args ...any) {
	line := fmt.Sprintf("%4d %s ", r.step, time.Now().UTC().Format("15:04:05.000000")) + fmt.Sprintf(format, args...)
	for i := 0; i < len(line); i++ {
		r.hash = (r.hash ^ uint64(line[i])) * fnvPrime
	}
	r.hash = (r.hash ^ '\n') * fnvPrime
	if len(r.tail) == tailLines {
		r.tail = append(r.tail[:0], r.tail[1:]...)
	}
	r.tail = append(r.tail, line)
	if r.trace != nil {
		r.trace(line)
	}
}

// tailLines is how much of the trace a failure reports.
const tailLines = 40

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// Report is a failure's account: the seed, the step, the invariant, how to
// replay it, and the trace before it.
func (res Result) Report(seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed=%d step=%d: %v\n", seed, res.FailedStep, res.Err)
	fmt.Fprintf(&b, "replay: go test ./internal/sim -run TestSim -seed %d -v   (or make sim SEED=%d)\n", seed, seed)
	b.WriteString("the trace before it:\n")
	for _, l := range res.Tail {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
