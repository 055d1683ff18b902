package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// bench is one run of the harness: its settings, the launcher, and the
// tokens of its identities (worker i is "worker-i"; "dispatcher" creates).
type bench struct {
	cfg          config
	l            *launcher
	workerTokens []string
	dispToken    string
}

// stage is one server with the callers that drive it.
type stage struct {
	b       *bench
	name    string
	srv     *serverProc
	tr      *http.Transport
	hc      *http.Client
	disp    *caller   // the dispatcher, for creates and reads
	loaders []*caller // dispatcher callers for parallel preloads
	began   time.Time
	fresh   bool // the server was started for this stage (VmHWM is its own)
}

// preloadConns is how many connections a preload spreads its batches over.
const preloadConns = 4

// open starts a server on a fresh data dir for the scenario name.
func (b *bench) open(name string) (*stage, error) {
	began := time.Now()
	dir, err := b.l.freshDataDir(name)
	if err != nil {
		return nil, err
	}
	srv, err := b.l.start(name, dir)
	if err != nil {
		return nil, err
	}
	s := b.attach(name, srv)
	s.began, s.fresh = began, true
	return s, nil
}

// attach makes callers for a running server.
func (b *bench) attach(name string, srv *serverProc) *stage {
	tr := newTransport(b.cfg.clients + preloadConns + 4)
	hc := &http.Client{Transport: tr, Timeout: 90 * time.Second}
	s := &stage{b: b, name: name, srv: srv, tr: tr, hc: hc, began: time.Now()}
	s.disp = newCaller(srv.url, b.dispToken, hc)
	for range preloadConns {
		s.loaders = append(s.loaders, newCaller(srv.url, b.dispToken, hc))
	}
	return s
}

// close stops the server gracefully.
func (s *stage) close() error {
	s.tr.CloseIdleConnections()
	_, err := s.srv.stop()
	return err
}

// abort kills the server (after a failure).
func (s *stage) abort() {
	s.tr.CloseIdleConnections()
	s.srv.kill()
}

// newResult is the scenario's result with its server's figures filled in.
func (s *stage) result(name string, cpu float64) *result {
	r := newResult(name, s.b.cfg.clients)
	r.RSSPeakMB = s.srv.mon.peakMB(s.fresh)
	r.CPUS = round3(cpu)
	r.WallS = round3(time.Since(s.began).Seconds())
	return r
}

// worker is one benchmark client: an identity, its own latencies, its ops.
type worker struct {
	i       int
	c       *caller
	rec     *recorder
	win     window
	ops     int64
	dryAt   time.Time // when claim-next first answered 204, if it did
	scratch []byte
}

// window is the measured interval; requests that start in it are counted.
type window struct{ start, end time.Time }

func (w window) has(t time.Time) bool { return !t.Before(w.start) && t.Before(w.end) }

// workers makes the scenario's clients, each with its own token.
func (s *stage) workers() []*worker {
	ws := make([]*worker, s.b.cfg.clients)
	for i := range ws {
		ws[i] = &worker{i: i, c: newCaller(s.srv.url, s.b.workerTokens[i], s.hc), rec: newRecorder(), scratch: make([]byte, 0, 256)}
	}
	return ws
}

// over says whether the worker's time is up.
func (w *worker) over() bool { return !time.Now().Before(w.win.end) }

// call times one request. The latency is kept under kind when the request
// started inside the window; any answer but 2xx counts as an error. measured
// says whether the request started inside the window.
func (w *worker) call(kind, method, path string, body []byte) (status int, resp []byte, measured bool) {
	t0 := time.Now()
	status, resp, err := w.c.do(method, path, body)
	measured = w.win.has(t0)
	if measured {
		if status == http.StatusNoContent {
			// An empty answer (claim-next found nothing) is kept apart
			// so that it does not flatter the type's percentiles.
			w.rec.add(kind+"_204", time.Since(t0))
		} else {
			w.rec.add(kind, time.Since(t0))
		}
	}
	if err != nil || status < 200 || status > 299 {
		w.rec.fail(kind + ": " + errKey(status, resp, err))
		if err != nil {
			// A broken connection would spin: give the server a moment.
			time.Sleep(10 * time.Millisecond)
		}
	}
	return status, resp, measured
}

// driven is what a drive measured besides the workers' own records.
type driven struct {
	win   window
	cpu   usage      // inside the window
	store storeUsage // the server's write path inside the window
}

// usage is CPU seconds spent by the server, by this harness, and by every
// other process of the machine (noise: the host is shared).
type usage struct{ server, client, other float64 }

func (u usage) add(v usage) usage {
	return usage{u.server + v.server, u.client + v.client, u.other + v.other}
}

// cpuMeter measures usage from its start.
type cpuMeter struct {
	srv                   *serverProc
	server, self, machine float64
}

func startCPU(srv *serverProc) cpuMeter {
	return cpuMeter{srv: srv, server: srv.cpuSeconds(), self: selfCPU(), machine: machineCPU()}
}

func (m cpuMeter) read() usage {
	u := usage{server: m.srv.cpuSeconds() - m.server, client: selfCPU() - m.self}
	u.other = max(0, machineCPU()-m.machine-u.server-u.client)
	return u
}

// drive runs fn on every worker at once: warmup, then the measured window
// of length d. fn loops until w.over() (or until it has nothing left to do).
func (s *stage) drive(ws []*worker, warmup, d time.Duration, fn func(w *worker)) driven {
	now := time.Now()
	win := window{start: now.Add(warmup), end: now.Add(warmup + d)}
	var wg sync.WaitGroup
	for _, w := range ws {
		w.win = win
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w)
		}()
	}
	time.Sleep(time.Until(win.start))
	s.srv.mon.reset()
	meter := startCPU(s.srv)
	before := s.srv.storeCounters()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(win.end)):
	}
	cpu := meter.read()
	st := s.srv.storeCounters().minus(before)
	<-done
	return driven{win: win, cpu: cpu, store: st}
}

// selfCPU is this process's user+system CPU time.
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// machineCPU is the busy CPU time of the whole machine (every core) from
// the first line of /proc/stat: user, nice, system, irq, softirq, steal.
func machineCPU() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		busy += n
	}
	return float64(busy) / clockTicks
}

// totals sums the workers' ops and merges their records.
func totals(ws []*worker) (int64, *recorder) {
	var ops int64
	recs := make([]*recorder, len(ws))
	for i, w := range ws {
		ops += w.ops
		recs[i] = w.rec
	}
	return ops, merge(recs...)
}

// firstDry is the earliest time a worker found its queue empty (zero if none did).
func firstDry(ws []*worker) time.Time {
	var t time.Time
	for _, w := range ws {
		if !w.dryAt.IsZero() && (t.IsZero() || w.dryAt.Before(t)) {
			t = w.dryAt
		}
	}
	return t
}

// batchSize is how many nodes one POST /v1/nodes/batch creates.
const batchSize = 1000

// createNodes creates n nodes through POST /v1/nodes/batch, 1000 a request,
// spread over the stage's loader connections. item appends the create body of
// node i to dst.
func (s *stage) createNodes(n int, item func(dst []byte, i int) []byte) (time.Duration, error) {
	began := time.Now()
	batches := make(chan int)
	errc := make(chan error, len(s.loaders))
	var wg sync.WaitGroup
	for _, c := range s.loaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := make([]byte, 0, 128*batchSize)
			for first := range batches {
				body = append(body[:0], `{"items":[`...)
				for i := first; i < min(first+batchSize, n); i++ {
					if i > first {
						body = append(body, ',')
					}
					body = item(body, i)
				}
				body = append(body, "]}"...)
				if _, err := c.must("POST", "/v1/nodes/batch", body, http.StatusCreated); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for first := 0; first < n; first += batchSize {
		select {
		case batches <- first:
		case err = <-errc:
			break feed
		}
	}
	close(batches)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	if err != nil {
		return 0, fmt.Errorf("error preloading nodes: %w", err)
	}
	return time.Since(began), nil
}

// queuedItem is the create body of a plain task in queue with id prefix-i.
func queuedItem(prefix, queue string) func(dst []byte, i int) []byte {
	return func(dst []byte, i int) []byte {
		dst = append(dst, `{"id":"`...)
		dst = append(dst, prefix...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `","type":"task"`...)
		if queue != "" {
			dst = append(dst, `,"queue":"`...)
			dst = append(dst, queue...)
			dst = append(dst, '"')
		}
		return append(dst, '}')
	}
}
