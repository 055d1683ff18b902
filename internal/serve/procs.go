package serve

import (
	"os"
	"runtime"
)

// syncSpareProcs is how many Go Ps the server runs beyond its CPUs on the
// Badger store, once its store is open: one for a goroutine that blocks in
// a disk sync on the write path (the log's fdatasync; Badger's msync of a
// table it flushed) while the CPUs serve requests.
//
// A goroutine in a system call keeps its P until the runtime's monitor
// takes it back, 20 µs to 10 ms later; a sync takes about 0.5 ms here. With
// a P per CPU, the syncs held the Ps of a two-core machine while requests
// waited with the CPUs idle (vmstat showed ~10 % idle and 5–14 % iowait
// under (a), perf ~12 % in the idle loop). In alternating 8 s runs of
// make bench on two cores, one spare P gave (a) ~5 300 → ~6 300 pairs/s and
// (d) ~18 700 → ~21 500 renewals/s, and left (b), which keeps the writer
// busy, where it was. Two did no better on (a), and more Ps than CPUs let
// more of the GC's idle mark workers run beside the requests: under (g),
// a million nodes' heap, two spare Ps lowered its throughput against the
// small queue to 0.71–0.82× where one gave 0.84–0.85×. Set before the
// rebuild, they slowed it (one goroutine beside the GC's workers) from ~8
// to ~10 s, so they are set after it.
const syncSpareProcs = 1

// spareProcs sets GOMAXPROCS to the CPUs the runtime found (its default,
// which follows a cgroup's CPU limit) plus syncSpareProcs, unless the
// GOMAXPROCS environment variable chose a number: that one stands. It
// returns the number in effect.
func spareProcs() int {
	n := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") != "" {
		return n
	}
	runtime.GOMAXPROCS(n + syncSpareProcs)
	return n + syncSpareProcs
}
