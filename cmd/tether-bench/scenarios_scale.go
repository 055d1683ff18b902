package main

import (
	"fmt"
	"os"
	"time"
)

// Scenario (g), the backlog's cost: a server restarted on -scale-nodes queued
// nodes (a million by default; the memory targets also name ten million:
// 200 bytes per queued node at a million, 150 at ten million), what
// it holds for them at ready, how long it takes to get there, and (a) on
// that backlog beside (a) on queues of 1 000 nodes in the same run.
//
// Memory per queued node is measured against a baseline server restarted on
// scaleBaseNodes nodes the same way, so that what every server holds
// (Badger's caches, the runtime, the HTTP stack) is not counted per node:
//
//	heap per node = (HeapInuse at N − HeapInuse at 1 000) ÷ N
//
// each HeapInuse read after a full collection (heapAfterGC), the lower of
// two readings.

// scaleBaseNodes is the backlog of (g)'s baseline server.
const scaleBaseNodes = 1000

// readyMemory is what a server holds at ready, before any load.
type readyMemory struct {
	rssMB      float64
	heap       heapStats
	startup    time.Duration
	startupCPU float64 // the server's CPU seconds to get to ready
}

// readMemoryAtReady reads a just-started server's RSS, then its settled heap.
func readMemoryAtReady(p *serverProc) (readyMemory, error) {
	m := readyMemory{rssMB: p.mon.nowMB(), startup: p.startup, startupCPU: p.cpuSeconds()}
	var err error
	m.heap, err = p.settledHeap()
	return m, err
}

func (m readyMemory) figures(r *result) {
	r.figure("startup_s", round3(m.startup.Seconds()))
	r.figure("startup_server_cpu_s", round3(m.startupCPU))
	r.figure("rss_ready_mb", m.rssMB)
	r.figure("heap_inuse_ready_mb", mib(m.heap.inuse))
	r.figure("heap_alloc_ready_mb", mib(m.heap.alloc))
}

func mib(n int64) float64 { return round1(float64(n) / (1 << 20)) }

func (b *bench) scenarioG() ([]*result, error) {
	base, baseMem, err := b.runGBase()
	if err != nil {
		return nil, err
	}
	big, err := b.runGBig(baseMem)
	if err != nil {
		return []*result{base}, err
	}
	if limit, got := b.cfg.maxNodeHeap, big.Figures["heap_inuse_per_node_b"]; limit > 0 && got > limit {
		return []*result{base, big}, fmt.Errorf("the Go heap in use per queued node is %.1f B, above -max-heap-per-node %.0f", got, limit)
	}
	small, err := b.runGSmall()
	if err != nil {
		return []*result{base, big}, err
	}
	tput := ratio(big.OpsPerS, small.OpsPerS)
	p99 := ratio(big.Latency["claim_next"].P99, small.Latency["claim_next"].P99)
	big.figure("throughput_vs_1k", round3(tput))
	big.figure("claim_next_p99_vs_1k", round3(p99))
	big.note("vs the 1k-node queue (g-1k): throughput %.2f×, claim_next p99 %.2f×, complete p99 %.2f×",
		tput, p99, ratio(big.Latency["complete"].P99, small.Latency["complete"].P99))
	return []*result{base, big, small}, nil
}

// ratio is x/y, or 0 when there is no y.
func ratio(x, y float64) float64 {
	if y == 0 {
		return 0
	}
	return x / y
}

// loadAndRestart preloads n queued nodes on the stage's fresh server, stops
// it, and restarts a server (with its profiler) on the same data dir.
func (b *bench) loadAndRestart(s *stage, n int) (*serverProc, loadFigures, error) {
	var lf loadFigures
	var err error
	meter := startCPU(s.srv)
	if lf.took, err = s.createNodes(n, queuedItem("g-", "q")); err != nil {
		s.abort()
		return nil, lf, err
	}
	lf.cpu = meter.read()
	lf.rssMB = s.srv.mon.peakMB(true)
	s.cl.closeAll()
	if lf.drain, err = s.srv.stop(); err != nil {
		return nil, lf, fmt.Errorf("error stopping the loaded server: %w", err)
	}
	srv, err := b.l.startWithProfiler(s.name+"-restart", s.srv.dataDir)
	if err != nil {
		return nil, lf, fmt.Errorf("error restarting on the loaded store: %w", err)
	}
	return srv, lf, nil
}

// loadFigures are what a preload cost the server.
type loadFigures struct {
	took, drain time.Duration
	rssMB       float64
	cpu         usage // during the preload
}

// runGBase measures the baseline: a server restarted on scaleBaseNodes.
func (b *bench) runGBase() (*result, readyMemory, error) {
	s, err := b.open("g-base")
	if err != nil {
		return nil, readyMemory{}, err
	}
	srv, _, err := b.loadAndRestart(s, scaleBaseNodes)
	if err != nil {
		return nil, readyMemory{}, err
	}
	mem, err := readMemoryAtReady(srv)
	if err != nil {
		srv.kill()
		return nil, mem, err
	}
	r := newResult("g-base", b.cfg.clients)
	r.RSSPeakMB = srv.mon.peakMB(true)
	mem.figures(r)
	r.note("no load: a server restarted on %d queued nodes, the baseline of g's memory per node", scaleBaseNodes)
	r.WallS = round3(time.Since(s.began).Seconds())
	if _, err := srv.stop(); err != nil {
		return r, mem, err
	}
	return r, mem, nil
}

func (b *bench) runGBig(base readyMemory) (*result, error) {
	s, err := b.open("g")
	if err != nil {
		return nil, err
	}
	n := b.cfg.scaleNodes
	srv, lf, err := b.loadAndRestart(s, n)
	if err != nil {
		return nil, err
	}
	mem, err := readMemoryAtReady(srv)
	if err != nil {
		srv.kill()
		return nil, err
	}
	began := s.began
	s = b.attach("g", srv)
	s.began, s.fresh = began, true
	ws := s.workers()
	dr := s.drive(ws, b.cfg.warmup, b.cfg.duration, claimComplete("q"))
	peakLoad := srv.mon.peakMB(false)
	ops, rec := totals(ws)
	r := s.result("g", dr.cpu.server)
	r.fill(ops, measuredSpan(ws, dr.win, r), rec)

	r.figure("nodes", float64(n))
	r.figure("load_s", round3(lf.took.Seconds()))
	r.figure("load_nodes_per_s", float64(int64(float64(n)/lf.took.Seconds())))
	// Steadier than nodes/s on a shared machine: the server's CPU a node.
	r.figure("load_server_cpu_us_per_node", round1(lf.cpu.server/float64(n)*1e6))
	mem.figures(r)
	r.figure("heap_inuse_per_node_b", round1(float64(mem.heap.inuse-base.heap.inuse)/float64(n)))
	r.figure("heap_alloc_per_node_b", round1(float64(mem.heap.alloc-base.heap.alloc)/float64(n)))
	r.figure("rss_ready_per_node_b", round1((mem.rssMB-base.rssMB)*(1<<20)/float64(n)))
	r.figure("rss_peak_load_mb", peakLoad)

	preloadNote(r, n, lf.took)
	r.note("during the preload: server peak RSS %.1f MB; CPU: server %.1fs, harness %.1fs, other processes %.1fs", lf.rssMB, lf.cpu.server, lf.cpu.client, lf.cpu.other)
	r.note("SIGTERM drain %.2fs; restart on the loaded store: ready in %.2fs, RSS at ready %.1f MB, Go heap in use after GC %.1f MB (%.1f MB at %d nodes)",
		lf.drain.Seconds(), mem.startup.Seconds(), mem.rssMB, mib(mem.heap.inuse), mib(base.heap.inuse), scaleBaseNodes)
	r.note("peak RSS under (a)'s load %.1f MB; server_rss_peak_mb is the restarted server's over its life, start-up included", peakLoad)
	if v := os.Getenv("TETHER_MEMORY_LIMIT"); v != "" {
		r.note("the servers ran with TETHER_MEMORY_LIMIT=%s", v)
	}
	cpuNote(r, dr.cpu)
	storeNote(r, dr.store, ops)
	return r, s.close()
}

// smallQueue is the queue size of the comparison run of (g).
const smallQueue = 1000

// runGSmall runs (a) on queues of 1000 nodes: refill 1000, drain them with
// every client, repeat until the measured draining time reaches -d. The
// refills are not measured; one unmeasured round warms up.
func (b *bench) runGSmall() (*result, error) {
	s, err := b.open("g-1k")
	if err != nil {
		return nil, err
	}
	ws := s.workers()
	var measured time.Duration
	var cpu usage
	rounds := 0
	for round := 0; measured < b.cfg.duration; round++ {
		if _, err := s.createNodes(smallQueue, queuedItem(fmt.Sprintf("k%d-", round), "q")); err != nil {
			s.abort()
			return nil, err
		}
		for _, w := range ws {
			w.dryAt = time.Time{}
		}
		dr := s.drive(ws, 0, time.Hour, claimComplete("q"))
		if round == 0 {
			for _, w := range ws {
				w.ops, w.rec = 0, newRecorder()
			}
			continue
		}
		measured += time.Since(dr.win.start)
		cpu = cpu.add(dr.cpu)
		rounds++
	}
	ops, rec := totals(ws)
	r := s.result("g-1k", cpu.server)
	r.fill(ops, measured, rec)
	cpuNote(r, cpu)
	r.note("%d rounds of: create %d queued nodes (unmeasured), drain them with %d clients (measured)", rounds, smallQueue, b.cfg.clients)
	return r, s.close()
}
