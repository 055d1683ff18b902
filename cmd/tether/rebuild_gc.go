package main

import "runtime/debug"

// rebuildGCPercent is the Go GC's target (GOGC) while the store rebuilds its
// in-memory state at start-up.
//
// The rebuild allocates what it keeps (a million queued nodes are ~900 MB of
// heap) and little garbage besides, so at the default target of 100 the
// collector marks the growing heap again and again for little: with a
// million nodes, five cycles at 150, 230, 350, 600 and 940 MB spent ~3.3 s of
// CPU beside the rebuild's goroutines. At 300 the heap passes through two
// cycles, and the start-up took ~1 s less in alternating runs on two cores;
// 400 was no faster and peaked ~200 MB higher. The full collection that
// follows the rebuild (debug.FreeOSMemory, which hands the rebuild's garbage
// back to the OS before serving) bounds what is resident once the server is
// ready all the same.
const rebuildGCPercent = 300

// gcForRebuild raises the GC target to rebuildGCPercent for the rebuild and
// returns the function that puts back the one in effect (GOGC's, or the
// default). A target already higher, or the collector off (GOGC=off), is
// left as it is. GOMEMLIMIT, when set, bounds the heap throughout.
func gcForRebuild() (restore func()) {
	prev := debug.SetGCPercent(rebuildGCPercent)
	if prev < 0 || prev >= rebuildGCPercent {
		debug.SetGCPercent(prev)
		return func() {}
	}
	return func() { debug.SetGCPercent(prev) }
}
