package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/client"
)

// soakSample is one second of a soak: disk, memory and claim latency.
type soakSample struct {
	at       time.Duration
	diskMiB  float64
	rssMiB   float64
	heapMiB  float64 // the Go heap in use (RSS less Badger's memory-mapped tables)
	removed  float64 // finished nodes retention removed so far
	claimP99 time.Duration
	jobs     int
}

// A server run at a constant rate with retention on levels off: once
// retention removes as much as comes in, disk use and RSS stop growing and
// claim latency does not grow. TETHER_SOAK_DURATION sets the run (default
// 30s with 3 s retention; `make soak` runs an hour with a minute), and
// TETHER_SOAK_RATE the jobs per second (default 200).
func TestSoakLevelsOff(t *testing.T) {
	dur, retention := 30*time.Second, 3*time.Second
	if v := os.Getenv("TETHER_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err)
		dur, retention = d, time.Minute
	}
	if testing.Short() {
		dur = 15 * time.Second
	}
	rate := 200
	if v := os.Getenv("TETHER_SOAK_RATE"); v != "" {
		r, err := strconv.Atoi(v)
		require.NoError(t, err)
		rate = r
	}
	dir := t.TempDir()
	srv := startServer(t, "soak", dir,
		fmt.Sprintf("TETHER_RETENTION_MS=%d", retention.Milliseconds()),
		"TETHER_CLEANER_INTERVAL_MS=200")
	hc := httpClient(t)
	valid := dur + time.Hour // the tokens outlast the run
	head, w := srv.as(hc, mintFor(t, valid, "head", "dispatcher")), srv.as(hc, mintFor(t, valid, "w", "worker"))
	ctx := context.Background()

	var mu sync.Mutex
	var lat []time.Duration
	jobs := 0
	job := func(id string) error {
		cr, err := head.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("soak"),
			Props: &map[string]any{"payload": strings.Repeat("x", 200)}})
		if err != nil || cr.StatusCode() != http.StatusCreated {
			return fmt.Errorf("create %s: %v %s", id, err, body(cr))
		}
		began := time.Now()
		cl, err := w.ClaimNextWithResponse(ctx, "soak", client.ClaimNextRequest{})
		took := time.Since(began)
		if err != nil || cl.StatusCode() != http.StatusOK {
			return fmt.Errorf("claim-next: %v %s", err, body(cl))
		}
		got := cl.JSON200
		if _, err := w.CreateCommentWithResponse(ctx, got.Node.ID, client.CommentCreate{Body: "working on it"}); err != nil {
			return err
		}
		res, err := w.CompleteNodeWithResponse(ctx, got.Node.ID, client.CompleteRequest{Fence: ptr(got.Lease.Fence), Result: &map[string]any{"ok": true}})
		if err != nil || res.StatusCode() != http.StatusOK {
			return fmt.Errorf("complete %s: %v %s", got.Node.ID, err, body(res))
		}
		mu.Lock()
		lat = append(lat, took)
		jobs++
		mu.Unlock()
		return nil
	}

	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const workers = 8
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Second * workers / time.Duration(rate))
			defer tick.Stop()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if err := job(fmt.Sprintf("s%d-%d", i, n)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var samples []soakSample
	sec := time.NewTicker(time.Second)
	for time.Since(start) < dur && !t.Failed() {
		<-sec.C
		mu.Lock()
		window, n := lat, jobs
		lat, jobs = nil, 0
		mu.Unlock()
		slices.Sort(window)
		var p99 time.Duration
		if len(window) > 0 {
			p99 = window[len(window)*99/100]
		}
		m := scrape(t, hc, srv.url)
		samples = append(samples, soakSample{time.Since(start), diskMiB(t, dir), rssMiB(t, srv.cmd.Process.Pid),
			m["go_memstats_heap_inuse_bytes"] / (1 << 20), m["tether_retention_nodes_removed_total"], p99, n})
	}
	sec.Stop()
	close(stop)
	wg.Wait()

	// Steady state begins once retention has run for a while; compare its
	// first and second halves.
	var steady []soakSample
	for _, s := range samples {
		if s.at > 3*retention+2*time.Second {
			steady = append(steady, s)
		}
	}
	require.GreaterOrEqual(t, len(steady), 6, "the run is too short to see a steady state")
	half := len(steady) / 2
	peak := func(ss []soakSample, f func(soakSample) float64) float64 {
		m := 0.0
		for _, s := range ss {
			m = max(m, f(s))
		}
		return m
	}
	disk := func(s soakSample) float64 { return s.diskMiB }
	heap := func(s soakSample) float64 { return s.heapMiB }
	rss := func(s soakSample) float64 { return s.rssMiB }
	p99 := func(s soakSample) float64 { return float64(s.claimP99) / float64(time.Millisecond) }
	total := 0
	for _, s := range samples {
		total += s.jobs
	}
	last := samples[len(samples)-1]
	t.Logf("soak: %v at %d jobs/s (%d done, %.0f removed by retention), retention %v; steady state, first half → second half: disk peak %.1f → %.1f MiB, RSS peak %.1f → %.1f MiB, Go heap peak %.1f → %.1f MiB, claim p99 peak %.1f → %.1f ms (median second %.1f → %.1f ms)",
		dur, rate, total, last.removed, retention, peak(steady[:half], disk), peak(steady[half:], disk),
		peak(steady[:half], rss), peak(steady[half:], rss), peak(steady[:half], heap), peak(steady[half:], heap),
		peak(steady[:half], p99), peak(steady[half:], p99), median(steady[:half], p99), median(steady[half:], p99))
	step := max(1, len(samples)/60)
	for i, s := range samples {
		if i%step == 0 || i == len(samples)-1 {
			t.Logf("  %6.0fs  disk %7.1f MiB  rss %6.1f MiB  heap %6.1f MiB  removed %8.0f  claim p99 %6.1f ms  %d jobs/s",
				s.at.Seconds(), s.diskMiB, s.rssMiB, s.heapMiB, s.removed, p99(s), s.jobs)
		}
	}
	require.Greater(t, last.removed, float64(total)/2, "retention removes what finished")
	require.LessOrEqual(t, peak(steady[half:], heap), 1.25*peak(steady[:half], heap)+8, "the Go heap keeps growing")
	require.LessOrEqual(t, peak(steady[half:], disk), 1.25*peak(steady[:half], disk)+16, "disk use keeps growing")
	require.LessOrEqual(t, peak(steady[half:], rss), 1.25*peak(steady[:half], rss)+16, "RSS keeps growing")
	// Latency is judged on the median second of each half, over the seconds
	// in which the load kept 90 % of its rate: a second in which the machine,
	// shared with other tests, starved client and server alike (jobs fell
	// with latency) is not growth. Too few such seconds and the machine,
	// not the server, decided the figure: said, not judged.
	kept := func(ss []soakSample) []soakSample {
		var out []soakSample
		for _, s := range ss {
			if s.jobs*10 >= rate*9 {
				out = append(out, s)
			}
		}
		return out
	}
	first, second := kept(steady[:half]), kept(steady[half:])
	if len(first) < 3 || len(second) < 3 {
		t.Logf("claim latency not judged: the load kept its rate in %d and %d seconds of the two halves", len(first), len(second))
		return
	}
	require.LessOrEqual(t, median(second, p99), 2*median(first, p99)+20, "claim latency grows")
}

// median is the median of f over ss.
func median(ss []soakSample, f func(soakSample) float64) float64 {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// diskMiB is the space the files under dir take on disk (allocated blocks,
// so preallocated and sparse files count for what they use).
func diskMiB(t *testing.T, dir string) float64 {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed while we walk
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				total += st.Blocks * 512
			}
		}
		return nil
	})
	require.NoError(t, err)
	return float64(total) / (1 << 20)
}

// scrape reads the numeric samples of /metrics without labels.
func scrape(t *testing.T, hc *http.Client, url string) map[string]float64 {
	resp, err := hc.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// rssMiB is a process's resident set size.
func rssMiB(t *testing.T, pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			require.NoError(t, err)
			return kb / 1024
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}
