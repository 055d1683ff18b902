package main

// The full-disk test: the real server with its data directory on a small
// tmpfs, under load until the disk is full. Before the store guarded its
// disk, Badger's first write into an unallocated page of its memory-mapped
// memtable killed the process with SIGBUS, and every restart did the same
// until space was freed.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/internal/kv"
	"github.com/tether-run/tether/internal/testskip"
)

const (
	dfDiskMiB    = 1280            // the tmpfs: room for the store, the reserve and a filler
	dfLeaveMiB   = 40              // what the filler leaves above the reserve for the load to take
	dfHeld       = 16              // leases held through the whole test
	dfTTL        = 4 * time.Second // their TTL: each lapses unless renewed while the disk is full
	dfRenewEvery = 500 * time.Millisecond
	dfFullFor    = 3 * time.Second // the load goes on this long once writes are refused
	dfRecoverMax = 10 * time.Second
)

// TestDiskFull fills the disk under a running `tether serve` with creates
// (60 KB bodies) while a worker renews the leases it holds and a reader
// reads what was created. Once the disk is full the server must stay up,
// refuse writes with 503 disk_full and acknowledge nothing it did not make
// durable, go on serving reads and renewals (no held lease lapses), and say
// so in /ready, the metric tether_store_disk_full and one log line. Once
// the filler is removed, writes must be taken again without a restart;
// after a clean stop `tether check` passes and every acknowledged create
// is there, and no refused one.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		testskip.Missing(t, "root", "mounting a size-limited tmpfs needs root")
	}
	disk := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(disk, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, fmt.Sprintf("size=%dm", dfDiskMiB)); err != nil {
		testskip.Missing(t, "tmpfs", "mount: "+err.Error())
	}
	t.Cleanup(func() {
		// After the server's own cleanup (registered later, run first).
		if err := syscall.Unmount(disk, syscall.MNT_DETACH); err != nil {
			t.Errorf("error unmounting the test's tmpfs: %v", err)
		}
	})
	dir := filepath.Join(disk, "data")

	p := startServer(t, "disk full", dir)
	hc := httpClient(t)
	disp := p.as(hc, mint(t, "disp", "dispatcher"))
	worker := p.as(hc, mint(t, "worker", "worker"))
	reader := p.as(hc, mint(t, "reader", "reader"))
	ctx := context.Background()

	// Leases held through the test, claimed while the disk has room.
	fences := map[string]int64{}
	for i := range dfHeld {
		id := fmt.Sprintf("held-%02d", i)
		cr, err := disp.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("held")})
		if err != nil || cr.StatusCode() != http.StatusCreated {
			t.Fatalf("create %s: %v %s", id, err, answer(cr))
		}
		cl, err := worker.ClaimNodeWithResponse(ctx, id, client.ClaimRequest{TTLMS: ptr(dfTTL.Milliseconds())})
		if err != nil || cl.JSON200 == nil {
			t.Fatalf("claim %s: %v %s", id, err, body(cl))
		}
		fences[id] = cl.JSON200.Lease.Fence
	}

	// The log zero-fills its spare segment in the background after start:
	// let it take its room before the filler measures what is left.
	spare := filepath.Join(dir, "wal", "spare.tmp")
	waitFor(t, 30*time.Second, "the log's spare segment is filled", func() bool {
		var st syscall.Stat_t
		return syscall.Stat(spare, &st) == nil && st.Blocks*512 >= 64<<20
	})
	filler := filepath.Join(disk, "filler")
	fillTo(t, disk, filler, kv.DefaultDiskReserve+dfLeaveMiB<<20)

	var (
		mu                  sync.Mutex
		acked               []string
		refusedIDs          []string
		refused, reads      atomic.Int64
		renewals, renewBad  atomic.Int64
		firstRefusal        = make(chan struct{})
		refusedOnce         sync.Once
		stop                = make(chan struct{})
		wg                  sync.WaitGroup
		problemSeen         string
		unexpected, created atomic.Int64
	)
	pad := strings.Repeat("x", 60_000)
	// Creators: until stopped, each create is 201 (acknowledged) or 503
	// disk_full (refused); anything else fails the test.
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("load-%d-%06d", w, i)
				cr, err := disp.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("load"), Body: ptr(pad)})
				switch {
				case err != nil:
					t.Errorf("create %s: %v", id, err)
					return
				case cr.StatusCode() == http.StatusCreated:
					created.Add(1)
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				case isDiskFull(cr.StatusCode(), cr.Body):
					refused.Add(1)
					mu.Lock()
					refusedIDs = append(refusedIDs, id)
					mu.Unlock()
					refusedOnce.Do(func() {
						problemSeen = string(cr.Body)
						close(firstRefusal)
					})
				default:
					unexpected.Add(1)
					t.Errorf("create %s: %d %s", id, cr.StatusCode(), cr.Body)
					return
				}
			}
		})
	}
	// The holder renews every lease each dfRenewEvery.
	wg.Go(func() {
		tick := time.NewTicker(dfRenewEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for id, fence := range fences {
				rn, err := worker.RenewLeaseWithResponse(ctx, id, client.RenewRequest{Fence: ptr(fence)})
				if err != nil || rn.StatusCode() != http.StatusOK {
					renewBad.Add(1)
					t.Errorf("renew %s: %v %s", id, err, body(rn))
					continue
				}
				renewals.Add(1)
			}
		}
	})
	// The reader reads back what was acknowledged.
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			n := len(acked)
			var id string
			if n > 0 {
				id = acked[i%n]
			}
			mu.Unlock()
			if id == "" {
				id = "held-00"
			}
			g, err := reader.GetNodeWithResponse(ctx, id)
			if err != nil || g.StatusCode() != http.StatusOK {
				t.Errorf("read %s: %v %s", id, err, answer(g))
				return
			}
			reads.Add(1)
		}
	})

	fillStart := time.Now()
	select {
	case <-firstRefusal:
	case <-time.After(2 * time.Minute):
		close(stop)
		wg.Wait()
		t.Fatalf("no write was refused within 2 minutes (%d creates acknowledged)", created.Load())
	case <-p.exited:
		t.Fatalf("the server died while the disk filled: %v", p.cmd.ProcessState)
	}
	t.Logf("writes refused %v after the filler, %d creates acknowledged by then; the problem: %s", time.Since(fillStart).Round(time.Millisecond), created.Load(), problemSeen)
	readsBefore, renewalsBefore, refusedBefore := reads.Load(), renewals.Load(), refused.Load()
	select {
	case <-time.After(dfFullFor): // the load goes on against the full disk
	case <-p.exited:
		t.Fatalf("the server died with the disk full: %v", p.cmd.ProcessState)
	}

	// While full: /ready, the metric and the log say so.
	ready, err := hc.Get(p.url + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	readyBody, _ := io.ReadAll(ready.Body)
	ready.Body.Close()
	if !isDiskFull(ready.StatusCode, readyBody) {
		t.Errorf("/ready with the disk full: %d %s, want 503 disk_full", ready.StatusCode, readyBody)
	}
	if v := metric(t, hc, p.url, "tether_store_disk_full"); v != "1" {
		t.Errorf("tether_store_disk_full = %q with the disk full, want 1 (writes refused, renewals taken)", v)
	}
	if lines := strings.Count(p.stderr.String(), "the data directory's disk is full"); lines != 1 {
		t.Errorf("%d log lines say the disk is full, want 1:\n%s", lines, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "free space on that filesystem") {
		t.Errorf("the log does not say what to do:\n%s", p.stderr.String())
	}
	t.Logf("with the disk full for %v: %d writes refused, %d reads served, %d renewals answered",
		dfFullFor, refused.Load()-refusedBefore, reads.Load()-readsBefore, renewals.Load()-renewalsBefore)
	if reads.Load() == readsBefore || renewals.Load() == renewalsBefore {
		t.Errorf("reads (%d) or renewals (%d) stopped with the disk full", reads.Load()-readsBefore, renewals.Load()-renewalsBefore)
	}

	// Space freed: writes are taken again, without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	var recovered time.Duration
	for i := 0; recovered == 0; i++ {
		id := fmt.Sprintf("after-%04d", i)
		cr, err := disp.CreateNodeWithResponse(ctx, nil, client.NodeCreate{ID: ptr(id), Type: "task", Queue: ptr("after")})
		switch {
		case err == nil && cr.StatusCode() == http.StatusCreated:
			recovered = time.Since(freed)
			mu.Lock()
			acked = append(acked, id)
			mu.Unlock()
		case err == nil && isDiskFull(cr.StatusCode(), cr.Body) && time.Since(freed) < dfRecoverMax:
			time.Sleep(10 * time.Millisecond) // the next try of a client told to retry
		default:
			t.Fatalf("create %s %v after the filler was removed: %v %s", id, time.Since(freed), err, answer(cr))
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("writes taken again %v after the filler was removed", recovered.Round(time.Millisecond))
	p.waitReady()
	if v := metric(t, hc, p.url, "tether_store_disk_full"); v != "0" {
		t.Errorf("tether_store_disk_full = %q once space is back, want 0", v)
	}
	// No held lease lapsed: each is still running under its first fence.
	for id, fence := range fences {
		rn, err := worker.RenewLeaseWithResponse(ctx, id, client.RenewRequest{Fence: ptr(fence)})
		if err != nil || rn.StatusCode() != http.StatusOK {
			t.Errorf("lease %s (fence %d) lapsed: %v %s", id, fence, err, body(rn))
		}
	}
	t.Logf("totals: %d creates acknowledged, %d refused, %d reads, %d renewals (%d failed)",
		len(acked), refused.Load(), reads.Load(), renewals.Load(), renewBad.Load())

	p.signal(syscall.SIGTERM)
	if code := p.waitExit(exitTimeout); code != 0 {
		t.Fatalf("tether serve exited %d after SIGTERM", code)
	}
	if out, err := exec.Command(tetherBin, "check", dir).CombinedOutput(); err != nil {
		t.Fatalf("tether check after the disk was full: %v\n%s", err, out)
	}
	p2 := startServer(t, "after the disk was full", dir)
	reader2 := p2.as(hc, mint(t, "reader", "reader"))
	for _, id := range acked {
		g, err := reader2.GetNodeWithResponse(ctx, id)
		if err != nil || g.StatusCode() != http.StatusOK {
			t.Errorf("acknowledged create %s is missing after the restart: %v %s", id, err, answer(g))
		}
	}
	for _, id := range refusedIDs {
		g, err := reader2.GetNodeWithResponse(ctx, id)
		if err != nil || g.StatusCode() != http.StatusNotFound {
			t.Errorf("refused create %s: %v %s, want 404", id, err, answer(g))
		}
	}
	p2.signal(syscall.SIGTERM)
	p2.waitExit(exitTimeout)
}

// answer is an answer's status and body for messages ("" for none).
func answer[R interface {
	*client.CreateNodeResponse | *client.GetNodeResponse
	StatusCode() int
}](r R) string {
	if r == nil {
		return ""
	}
	var b []byte
	switch v := any(r).(type) {
	case *client.CreateNodeResponse:
		b = v.Body
	case *client.GetNodeResponse:
		b = v.Body
	}
	return fmt.Sprintf("%d %s", r.StatusCode(), b)
}

// isDiskFull reports whether an answer is the 503 disk_full problem.
func isDiskFull(status int, b []byte) bool {
	var prob struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	return status == http.StatusServiceUnavailable && json.Unmarshal(b, &prob) == nil &&
		prob.Status == http.StatusServiceUnavailable && prob.Code == string(client.ProblemCodeDiskFull)
}

// metric is the value of an unlabelled series on the server's /metrics.
func metric(t *testing.T, hc *http.Client, url, name string) string {
	t.Helper()
	resp, err := hc.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			return v
		}
	}
	return ""
}

// fillTo makes the file at path take the room of dir's filesystem but
// leave bytes, allocated (tmpfs keeps fallocated pages).
func fillTo(t *testing.T, dir, path string, leave int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	if free <= leave {
		t.Fatalf("the disk has %d MiB free, less than the %d MiB the test leaves", free>>20, leave>>20)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, free-leave); err != nil {
		t.Fatalf("error filling the disk: %v", err)
	}
}

// waitFor polls cond every 10 ms until it holds, failing after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
