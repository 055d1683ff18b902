package main

import (
	"os"
	"runtime"
)

// syncSpareProcs is how many Go Ps the server runs beyond its CPUs on the
// Badger store: one for each goroutine that blocks in a disk sync on the
// write path, the log's fdatasync and Badger's msync of its memtable.
//
// A goroutine in a system call keeps its P until the runtime's monitor
// takes it back, 20 µs to 10 ms later; a sync takes about 0.5 ms here. With
// a P per CPU, the two syncs hold both Ps of a two-core machine while
// requests wait with the CPUs idle (vmstat showed 10 % idle and 5–14 %
// iowait under (a)). With two spare Ps, alternating 8 s runs of make bench
// on two cores gave (a) ~4 700 → ~5 800 pairs/s and (d) ~18 700 → ~21 500
// renewals/s, and left (b), which keeps the writer busy, where it was.
const syncSpareProcs = 2

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
