// Package memlimit chooses the Go runtime's soft memory limit for the server
// and applies it (debug.SetMemoryLimit).
//
// Without a limit the GC lets the heap grow to twice what it keeps live
// (GOGC=100), so a server whose live heap is large peaks near twice it under
// load. With a limit near what the machine or container allows, the GC runs
// more often as the heap nears it instead of letting it double; the limit is
// soft, so a live heap above it is not an out-of-memory error, only more GC.
//
// The choice, first that applies:
//
//  1. the setting (TETHER_MEMORY_LIMIT or serve --memory-limit): a size such as
//     2GiB, or 0/off for no limit at all (this also lifts GOMEMLIMIT);
//  2. GOMEMLIMIT, which the Go runtime applied itself before main;
//  3. CgroupShare (90 %) of the memory limit of the cgroup the process runs
//     in: cgroup v2's memory.max or v1's memory.limit_in_bytes, the lowest
//     over the process's cgroup and its ancestors;
//  4. no limit.
//
// Invariants: the cgroup files are found through /proc/self/cgroup and
// /proc/self/mountinfo under a root path (tests give a testdata directory),
// never assumed at one place; an unreadable or unlimited cgroup means no
// limit, never an error that stops the server; a malformed setting is an
// error, never silently ignored.
package memlimit
