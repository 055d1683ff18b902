package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/tether-run/tether/client"
)

// Schedules across kill -9: a fire, its nodes and the schedule's next fire
// commit together, so every fire instant is accounted for exactly once (a
// run, a fire folded into a catch-up run, or a skipped fire) and every node a
// schedule made belongs to exactly one run, wherever the kills land.
func TestKill9ScheduleFiresNeitherLostNorDoubled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	head := mint(t, "head", "dispatcher")
	hc := httpClient(t)
	srv := startServer(t, "sched-0", dir)
	ctx := context.Background()
	c := srv.as(hc, head)
	for _, s := range []client.ScheduleCreate{
		// Every second, each missed fire run after a restart.
		{ID: ptr("each"), Cron: ptr("* * * * * *"), Template: client.ScheduleNode{Type: "each", Queue: ptr("default")},
			Overlap: ptr(client.ScheduleOverlapAllow), Catchup: ptr(client.ScheduleCatchup("all"))},
		// Every second, missed fires folded into one catch-up run.
		{ID: ptr("once"), Cron: ptr("@every 1s"), Template: client.ScheduleNode{Type: "once", Queue: ptr("default")},
			Overlap: ptr(client.ScheduleOverlapAllow)},
	} {
		res, err := c.CreateScheduleWithResponse(ctx, s)
		if err != nil || res.StatusCode() != http.StatusCreated {
			t.Fatalf("create %s: %v %s", *s.ID, err, body(res))
		}
	}
	for round := 1; round <= 4; round++ {
		time.Sleep(time.Duration(600+rand.IntN(900)) * time.Millisecond)
		srv.kill9()
		srv = startServer(t, fmt.Sprintf("sched-%d", round), dir)
	}
	time.Sleep(1500 * time.Millisecond)
	c = srv.as(hc, head)
	for _, id := range []string{"each", "once"} {
		res, err := c.PauseScheduleWithResponse(ctx, id, client.ScheduleNote{})
		if err != nil || res.StatusCode() != http.StatusOK {
			t.Fatalf("pause %s: %v %s", id, err, body(res))
		}
	}

	for _, id := range []string{"each", "once"} {
		res, err := c.ListScheduleRunsWithResponse(ctx, id, &client.ListScheduleRunsParams{Limit: ptr(1000)})
		if err != nil || res.StatusCode() != http.StatusOK {
			t.Fatalf("runs of %s: %v %s", id, err, body(res))
		}
		covered := map[int64]int{}
		made := map[string]int{}
		for _, r := range res.JSON200.Items {
			if r.SkipReason != nil {
				n := int64(0)
				for s := r.ScheduledAt.Unix(); s <= r.LastScheduledAt.Unix(); s++ {
					covered[s]++
					n++
				}
				if n != r.SkippedFires {
					t.Errorf("%s: skipped row %d spans %d fires, says %d", id, r.Seq, n, r.SkippedFires)
				}
				continue
			}
			at := r.ScheduledAt.Unix()
			for i := int64(0); i <= r.CoalescedFires; i++ {
				covered[at-i]++
			}
			for _, n := range r.Nodes {
				made[n]++
			}
		}
		first, last := int64(1<<62), int64(0)
		for s := range covered {
			first, last = min(first, s), max(last, s)
		}
		if last-first < 4 {
			t.Fatalf("%s: only %d fire instants", id, last-first+1)
		}
		for s := first; s <= last; s++ {
			if covered[s] != 1 {
				t.Errorf("%s: the fire at %s is accounted for %d times", id, time.Unix(s, 0).UTC(), covered[s])
			}
		}
		nodes, err := c.ListNodesWithResponse(ctx, &client.ListNodesParams{Type: ptr(id), Limit: ptr(1000)})
		if err != nil || nodes.StatusCode() != http.StatusOK {
			t.Fatalf("nodes of %s: %v %s", id, err, body(nodes))
		}
		for _, n := range nodes.JSON200.Items {
			if made[n.ID] != 1 {
				t.Errorf("%s: node %s is in %d runs", id, n.ID, made[n.ID])
			}
			delete(made, n.ID)
		}
		if len(made) > 0 {
			t.Errorf("%s: runs name nodes that do not exist: %v", id, made)
		}
		t.Logf("%s: %d fire instants, %d runs, %d nodes", id, last-first+1, len(res.JSON200.Items), len(nodes.JSON200.Items))
	}
}
