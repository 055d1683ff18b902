package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// heapStats are a server's Go heap figures right after a full collection.
type heapStats struct {
	inuse int64 // HeapInuse: bytes in spans holding at least one object
	alloc int64 // HeapAlloc: bytes of live objects (after the collection)
}

// startWithProfiler is start with the server's profiler on a free loopback
// port of its own (TETHER_PPROF_ADDR, which has no public route), so that
// heapAfterGC can read the heap.
func (l *launcher) startWithProfiler(name, dataDir string, extra ...string) (*serverProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// Later entries of a command's environment win: this one over a
	// TETHER_PPROF_ADDR passed through from the harness's environment.
	p, err := l.start(name, dataDir, append(extra, "TETHER_PPROF_ADDR="+addr)...)
	if err != nil {
		return nil, err
	}
	p.pprofURL = "http://" + addr
	return p, nil
}

// heapAfterGC asks the server's profiler for its heap profile with gc=1:
// the runtime runs a full collection first, and the debug=1 text ends with
// runtime.MemStats read after it. A collection over ten million nodes takes
// seconds, hence the long timeout.
func (p *serverProc) heapAfterGC() (heapStats, error) {
	if p.pprofURL == "" {
		return heapStats{}, fmt.Errorf("%s was started without its profiler", p.name)
	}
	c := http.Client{Timeout: 2 * time.Minute}
	resp, err := c.Get(p.pprofURL + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return heapStats{}, fmt.Errorf("error reading %s's heap: %w", p.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return heapStats{}, fmt.Errorf("error reading %s's heap: %s", p.name, resp.Status)
	}
	return parseMemStats(resp.Body)
}

// settledHeap is the lower of two heapAfterGC readings: what the server
// keeps, without garbage a request or a background loop made in between.
func (p *serverProc) settledHeap() (heapStats, error) {
	first, err := p.heapAfterGC()
	if err != nil {
		return first, err
	}
	second, err := p.heapAfterGC()
	if err != nil {
		return second, err
	}
	return heapStats{inuse: min(first.inuse, second.inuse), alloc: min(first.alloc, second.alloc)}, nil
}

// parseMemStats reads HeapInuse and HeapAlloc from the "# runtime.MemStats"
// lines of a debug=1 heap profile ("# HeapInuse = 123").
func parseMemStats(r io.Reader) (heapStats, error) {
	var h heapStats
	var seen int
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), " = ")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "HeapInuse":
			dst = &h.inuse
		case "HeapAlloc":
			dst = &h.alloc
		default:
			continue
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return h, fmt.Errorf("heap profile: %s = %q is not a number", name, val)
		}
		*dst = n
		seen++
	}
	if err := sc.Err(); err != nil {
		return h, fmt.Errorf("error reading the heap profile: %w", err)
	}
	if seen < 2 {
		return h, fmt.Errorf("heap profile without HeapInuse and HeapAlloc")
	}
	return h, nil
}
