package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"runtime/debug"
	"strings"
	"testing"
)

// TestParseMemStatsOfRealProfile reads the heap profile net/http/pprof
// serves (what tether serve's TETHER_PPROF_ADDR listener mounts), after the
// collection gc=1 asks for.
func TestParseMemStatsOfRealProfile(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(pprof.Index))
	defer srv.Close()
	keep := bytes.Repeat([]byte{1}, 64<<20) // a live heap of at least 64 MiB
	p := &serverProc{name: "test", pprofURL: srv.URL}
	h, err := p.settledHeap()
	if err != nil {
		t.Fatal(err)
	}
	if h.alloc < 64<<20 || h.inuse < h.alloc {
		t.Fatalf("heap after GC: inuse %d, alloc %d; want alloc ≥ 64 MiB ≤ inuse", h.inuse, h.alloc)
	}
	if keep[len(keep)-1] != 1 {
		t.Fatal("unreachable: keeps the buffer live")
	}
	debug.FreeOSMemory()
}

func TestParseMemStats(t *testing.T) {
	h, err := parseMemStats(strings.NewReader("heap profile: 1: 2 [3: 4] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 5\n# HeapAlloc = 1200\n# HeapSys = 9000\n# HeapInuse = 2048\n"))
	if err != nil || h != (heapStats{inuse: 2048, alloc: 1200}) {
		t.Fatalf("got %+v, %v", h, err)
	}
	for _, bad := range []string{"", "# HeapInuse = 1\n", "# HeapInuse = x\n# HeapAlloc = 1\n"} {
		if _, err := parseMemStats(strings.NewReader(bad)); err == nil {
			t.Fatalf("%q: want an error", bad)
		}
	}
	p := &serverProc{name: "plain"}
	if _, err := p.heapAfterGC(); err == nil {
		t.Fatal("a server without its profiler: want an error")
	}
}
