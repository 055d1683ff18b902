package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// bench is one run of the harness: its settings, the launcher, and the
// tokens of its identities (worker i is "worker-i" in tenant tenantOf(i);
// each tenant's "dispatcher" creates).
type bench struct {
	cfg          config
	l            *launcher
	workerTokens []string
	dispTokens   []string // by tenant

	// With -store etcd (cluster.go) or postgres (postgres.go).
	etcd      *clientv3.Client
	pg        *pgxpool.Pool
	runPrefix string
	stages    int
}

// stage is the servers of a scenario with the callers that drive them.
type stage struct {
	b       *bench
	name    string
	srv     *serverProc   // srvs[0]
	srvs    []*serverProc // one with Badger; -servers with etcd
	prefix  string        // the stage's etcd prefix or PostgreSQL schema ("" with Badger)
	cl      *clients
	disp    *caller     // tenant 0's dispatcher on server 0, for creates and reads
	loaders [][]*caller // [loader][tenant]: dispatchers for parallel preloads
	began   time.Time
	fresh   bool // the servers were started for this stage (VmHWM is their own)
}

// preloadConns is how many connections a preload spreads its batches over.
const preloadConns = 4

// open starts the stage's servers (one on a fresh data dir; with etcd,
// -servers on a fresh prefix; with PostgreSQL, in a fresh schema) for the
// scenario name.
func (b *bench) open(name string) (*stage, error) {
	began := time.Now()
	prefix := b.storeNamespace(name)
	var srvs []*serverProc
	fail := func(err error) (*stage, error) {
		for _, p := range srvs {
			p.kill()
		}
		_ = b.dropNamespace(prefix)
		return nil, err
	}
	for i := range b.cfg.servers {
		srvName := name
		if b.cfg.servers > 1 {
			srvName = fmt.Sprintf("%s-%d", name, i)
		}
		dir, err := b.l.freshDataDir(srvName)
		if err != nil {
			return fail(err)
		}
		srv, err := b.l.startOn(srvName, dir, prefix)
		if err != nil {
			return fail(err)
		}
		srvs = append(srvs, srv)
	}
	s := b.attach(name, srvs...)
	s.began, s.fresh, s.prefix = began, true, prefix
	if prefix != "" {
		took, split, err := s.settle()
		if err != nil {
			s.cl.closeAll()
			return fail(err)
		}
		fmt.Fprintf(os.Stderr, "stage %s: %d servers ready; shards per server %s; every tenant answering through each %.2fs later\n",
			name, len(srvs), split, took.Seconds())
	}
	return s, nil
}

// attach makes callers for running servers.
func (b *bench) attach(name string, srvs ...*serverProc) *stage {
	cl := newClients(b.cfg.client == clientRaw, b.cfg.clients+preloadConns*b.cfg.tenants+4)
	s := &stage{b: b, name: name, srv: srvs[0], srvs: srvs, cl: cl, began: time.Now()}
	s.disp = newCaller(srvs[0].url, b.dispTokens[0], cl)
	for k := range preloadConns {
		var byTenant []*caller
		for _, tok := range b.dispTokens {
			byTenant = append(byTenant, newCaller(srvs[k%len(srvs)].url, tok, cl))
		}
		s.loaders = append(s.loaders, byTenant)
	}
	return s
}

// close stops the servers gracefully (and drops the stage's etcd keys).
func (s *stage) close() error {
	s.cl.closeAll()
	var errs []error
	for _, p := range s.srvs {
		if _, err := p.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.b.dropNamespace(s.prefix); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// abort kills the servers (after a failure).
func (s *stage) abort() {
	s.cl.closeAll()
	for _, p := range s.srvs {
		p.kill()
	}
	_ = s.b.dropNamespace(s.prefix)
}

// newResult is the scenario's result with its server's figures filled in.
func (s *stage) result(name string, cpu float64) *result {
	r := newResult(name, s.b.cfg.clients)
	for _, p := range s.srvs {
		r.RSSPeakMB += p.mon.peakMB(s.fresh)
	}
	r.RSSPeakMB = round1(r.RSSPeakMB)
	if len(s.srvs) > 1 {
		r.note("%d servers: server RSS and CPU are sums over them; client i talks to server i mod %d, in tenant i mod %d",
			len(s.srvs), len(s.srvs), s.b.cfg.tenants)
	}
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
		url := s.srvs[i%len(s.srvs)].url
		ws[i] = &worker{i: i, c: newCaller(url, s.b.workerTokens[i], s.cl), rec: newRecorder(), scratch: make([]byte, 0, 256)}
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
	srvs                  []*serverProc
	server, self, machine float64
}

func startCPU(srvs ...*serverProc) cpuMeter {
	return cpuMeter{srvs: srvs, server: serversCPU(srvs), self: selfCPU(), machine: machineCPU()}
}

func (m cpuMeter) read() usage {
	u := usage{server: serversCPU(m.srvs) - m.server, client: selfCPU() - m.self}
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
	for _, p := range s.srvs {
		p.mon.reset()
	}
	meter := startCPU(s.srvs...)
	before := storeCounters(s.srvs)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(win.end)):
	}
	cpu := meter.read()
	st := storeCounters(s.srvs).minus(before)
	<-done
	return driven{win: win, cpu: cpu, store: st}
}

// serversCPU is the CPU time of the servers together.
func serversCPU(srvs []*serverProc) float64 {
	var sum float64
	for _, p := range srvs {
		sum += p.cpuSeconds()
	}
	return sum
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
// spread over the stage's loader connections; node i goes to tenant i mod
// tenants. item appends the create body of node i to dst.
func (s *stage) createNodes(n int, item func(dst []byte, i int) []byte) (time.Duration, error) {
	return s.createNodesBy(n, s.b.cfg.tenantOf, item)
}

// createNodesBy is createNodes with node i in tenant tenantOf(i).
func (s *stage) createNodesBy(n int, tenantOf func(i int) int, item func(dst []byte, i int) []byte) (time.Duration, error) {
	began := time.Now()
	// Each batch is one tenant's next (up to) 1000 nodes, tenants in turn.
	type batch struct {
		tenant int
		ids    []int
	}
	byTenant := make([][]int, s.b.cfg.tenants)
	for i := range n {
		t := tenantOf(i)
		byTenant[t] = append(byTenant[t], i)
	}
	var plan []batch
	for more := true; more; {
		more = false
		for t, ids := range byTenant {
			if len(ids) == 0 {
				continue
			}
			k := min(batchSize, len(ids))
			plan = append(plan, batch{t, ids[:k]})
			byTenant[t] = ids[k:]
			more = true
		}
	}
	batches := make(chan batch)
	errc := make(chan error, len(s.loaders))
	var wg sync.WaitGroup
	for _, cs := range s.loaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := make([]byte, 0, 128*batchSize)
			for bt := range batches {
				body = append(body[:0], `{"items":[`...)
				for j, i := range bt.ids {
					if j > 0 {
						body = append(body, ',')
					}
					body = item(body, i)
				}
				body = append(body, "]}"...)
				if _, err := cs[bt.tenant].must("POST", "/v1/nodes/batch", body, http.StatusCreated); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for _, bt := range plan {
		select {
		case batches <- bt:
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
