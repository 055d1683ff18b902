package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
)

// TestKill9UnderClaimNextLoadLeavesNoNodeStuck runs 16 workers that take
// nodes with claim-next and complete or fail them, kills the server mid-run,
// and checks that after the restart every node is done, back in its queue, or
// running under a lease that is still live — and that every running one is
// back in its queue within its TTL plus the reaper interval.
func TestKill9UnderClaimNextLoadLeavesNoNodeStuck(t *testing.T) {
	const nodes, workers = 1000, 16
	const ttl = 2 * time.Second
	dir := t.TempDir()
	p1 := startServer(t, "before kill -9", dir)
	hc := httpClient(t)
	ctx := context.Background()
	disp := p1.as(hc, mint(t, "head", "dispatcher"))
	items := make([]client.NodeCreate, nodes)
	for i := range items {
		items[i] = client.NodeCreate{ID: ptr(fmt.Sprintf("load-%03d", i)), Type: "task", Queue: ptr("q"), MaxAttempts: ptr(int64(100))}
	}
	res, err := disp.CreateNodesBatchWithResponse(ctx, nil, client.NodeBatchCreate{Items: items})
	if err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("batch create: %v %s", err, body(res))
	}

	var claimed, finished atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := p1.as(hc, mint(t, fmt.Sprintf("worker-%d", w), "worker"))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				cl, err := c.ClaimNextWithResponse(ctx, "q", client.ClaimNextRequest{TTLMS: ptr(ttl.Milliseconds())})
				if err != nil {
					return // the server is gone
				}
				if cl.StatusCode() != http.StatusOK {
					continue
				}
				claimed.Add(1)
				id := cl.JSON200.Node.ID
				if i%3 == 2 {
					_, err = c.FailNodeWithResponse(ctx, id, client.FailRequest{Error: "flaky"})
				} else {
					_, err = c.CompleteNodeWithResponse(ctx, id, client.CompleteRequest{})
				}
				if err != nil {
					return
				}
				finished.Add(1)
			}
		}(w)
	}
	time.Sleep(300 * time.Millisecond)
	p1.kill9()
	close(stop)
	wg.Wait()
	t.Logf("before the kill: %d claims, %d answered completes/fails", claimed.Load(), finished.Load())

	p2 := startServer(t, "after kill -9", dir)
	restarted := time.Now()
	reader := p2.as(hc, mint(t, "auditor", "reader"))
	// strict: every running node must hold a live lease (true right after the
	// restart; later, a lease may lapse up to one reaper interval before the
	// reaper settles it, which the contract allows).
	status := func(strict bool) (running, queued, done int) {
		var cursor *string
		for {
			page, err := reader.ListNodesWithResponse(ctx, &client.ListNodesParams{Limit: ptr(1000), Cursor: cursor})
			if err != nil || page.StatusCode() != http.StatusOK {
				t.Fatalf("list: %v %s", err, body(page))
			}
			for _, n := range page.JSON200.Items {
				if n.Type != "task" {
					continue
				}
				switch n.Status {
				case client.NodeStatusRunning:
					if strict && (n.Lease == nil || !n.Lease.ExpiresAt.After(time.Now())) {
						t.Errorf("%s is running without a live lease: %+v", n.ID, n.Lease)
					}
					running++
				case client.NodeStatusQueued:
					queued++
				case client.NodeStatusDone:
					done++
				default:
					t.Errorf("%s: unexpected status %s", n.ID, n.Status)
				}
			}
			if page.JSON200.NextCursor == nil {
				return
			}
			cursor = page.JSON200.NextCursor
		}
	}
	running, queued, done := status(true)
	t.Logf("after the restart: %d running (leased), %d queued, %d done", running, queued, done)
	if done == nodes {
		t.Fatalf("every node finished before the kill: the test proves nothing; give it more work")
	}
	if running+queued+done != nodes {
		t.Fatalf("%d nodes accounted for, want %d", running+queued+done, nodes)
	}
	deadline := restarted.Add(ttl + reaperInterval + 3*time.Second)
	for running > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		running, _, _ = status(false)
	}
	if running > 0 {
		t.Fatalf("%d nodes still running %v after the restart", running, time.Since(restarted).Round(time.Millisecond))
	}
	t.Logf("every orphaned run back in its queue %v after the restart", time.Since(restarted).Round(time.Millisecond))
}
