package serve

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/tether-run/tether/internal/memlimit"
)

// The store's rebuild at open (graphstore.Options.DuringRebuild, which
// serve sets to pauseGC through server.Config) keeps a heap that grows all along (the table, the
// trees) and leaves garbage behind it (a decoded record per node), so at the
// default GOGC the GC runs again each time the heap has grown by what is
// live, and marks all of it each time: about a third of the start-up's CPU
// at a million nodes. pauseGC turns the
// proportional GC off for the rebuild and lets the soft memory limit alone
// call the GC: the one set (GOMEMLIMIT, debug.SetMemoryLimit), or when none
// is, a guard of half the memory the machine (or its cgroup) has, so the
// heap never grows unbounded while the GC is off. The returned func restores
// both settings and then returns the rebuild's garbage to the system
// (debug.FreeOSMemory: one collection, marking what is live), so the RSS a
// server shows once ready is its live heap, not the pause's high-water mark.
// Stores opened at once (a cluster's shards) share one pause: the last to
// finish restores what the first found. The GC settings are the process's,
// so the process decides: the store only calls the hook.
var gcPause struct {
	mu      sync.Mutex
	holders int
	percent int
	limit   int64
}

func pauseGC() (resume func()) {
	gcPause.mu.Lock()
	defer gcPause.mu.Unlock()
	if gcPause.holders == 0 {
		limit := debug.SetMemoryLimit(-1)
		guard := limit
		if guard == math.MaxInt64 {
			guard = memoryAvailable() / 2
		}
		if guard <= 0 {
			return func() {} // no guard known: the GC stays as it is
		}
		gcPause.limit = limit
		debug.SetMemoryLimit(guard)
		gcPause.percent = debug.SetGCPercent(-1)
	}
	gcPause.holders++
	var once sync.Once
	return func() {
		once.Do(func() {
			gcPause.mu.Lock()
			defer gcPause.mu.Unlock()
			gcPause.holders--
			if gcPause.holders == 0 {
				debug.SetGCPercent(gcPause.percent)
				debug.SetMemoryLimit(gcPause.limit)
				debug.FreeOSMemory()
			}
		})
	}
}

// memoryAvailable is the lower of the cgroup's memory limit
// (memlimit.CgroupLimit) and the machine's memory (/proc/meminfo's
// MemTotal), in bytes; 0 where neither can be read.
func memoryAvailable() int64 {
	total := memTotal()
	if limit, _, err := memlimit.CgroupLimit("/"); err == nil && limit > 0 && (total == 0 || limit < total) {
		return limit
	}
	return total
}

// memTotal is /proc/meminfo's MemTotal in bytes, 0 where it cannot be read.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := bytes.Fields(sc.Bytes()); len(fields) >= 2 && string(fields[0]) == "MemTotal:" {
			if kb, err := strconv.ParseInt(string(fields[1]), 10, 64); err == nil {
				return kb << 10
			}
			return 0
		}
	}
	return 0
}
